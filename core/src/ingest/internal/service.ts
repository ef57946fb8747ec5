import { createHash, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../../errors'
import { MESSAGE_LIMIT_BYTES, truncateUtf8 } from '../shared/text'
import { contentHash } from '../shared/rows'
import { storedText, stripNul } from '../shared/values'
import type { ScanFindingsBody } from './model'

/**
 * The secret from `Authorization: Bearer` or `X-Internal-Secret`: all of what follows, so that a
 * secret with spaces in it (a passphrase; INTERNAL_SECRET takes one) is one in either header.
 */
export function presentedSecret(authorization: string | undefined, headerSecret: string | undefined): string | undefined {
  return authorization?.match(/^\s*Bearer\s+(\S(?:.*\S)?)\s*$/i)?.[1] ?? headerSecret?.trim() ?? undefined
}

const digest = (text: string) => createHash('sha256').update(text).digest()

/**
 * Compared in constant time: both sides are hashed first, so neither the content nor the length of
 * the configured secret shows in how long a wrong guess takes.
 */
export function assertSecret(presented: string | undefined, expected: string): void {
  if (!presented) throw new ApiError('invalid_secret', 'send the internal secret as "Authorization: Bearer <secret>" or "X-Internal-Secret"')
  if (!timingSafeEqual(digest(presented), digest(expected))) throw new ApiError('invalid_secret', 'the internal secret does not match')
}

export interface FindingRow {
  projectId: string
  fingerprint: string
  source: string | null
  ruleId: string
  severity: string
  file: string
  line: number | null
  message: string
}

/**
 * Findings as rows. Without a fingerprint of the scanner's own, the finding is identified by what
 * it says and where; a scanner that wants a finding to survive moved lines sends one.
 */
export function findingRows(body: ScanFindingsBody): FindingRow[] {
  const source = body.source ? stripNul(body.source) : null
  return body.findings.map((finding) => {
    const message = truncateUtf8(finding.message, MESSAGE_LIMIT_BYTES)
    const line = finding.line ?? null
    return {
      projectId: body.projectId.toLowerCase(),
      // As stored (see storedText): fingerprints stored as one are one finding of the commit too.
      fingerprint: finding.fingerprint ? storedText(finding.fingerprint) : contentHash([source, finding.ruleId, finding.file, line, message]),
      source,
      ruleId: stripNul(finding.ruleId),
      severity: finding.severity,
      file: stripNul(finding.file),
      line,
      message,
    }
  })
}
