import { createHash, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../../errors'
import { MESSAGE_LIMIT_BYTES, truncateUtf8 } from '../shared/text'
import { contentHash } from '../shared/rows'
import { storedText, stripNul } from '../shared/values'
import type { ScanFindingsBody } from './model'

/**
 * The secret from `Authorization: Bearer` or `X-Internal-Secret`: all of what follows, so that a
 * secret with spaces in it (a passphrase; INTERNAL_SECRET takes one) is one in either header. Only
 * HTTP's own spaces and tabs are trimmed: a header's bytes arrive as characters, and a UTF-8 letter
 * ending in byte A0 (à) would otherwise lose it as a no-break space.
 */
export function presentedSecret(authorization: string | undefined, headerSecret: string | undefined): string | undefined {
  return authorization?.match(/^[ \t]*Bearer[ \t]+([^ \t](?:.*[^ \t])?)[ \t]*$/i)?.[1] ?? headerSecret?.replace(/^[ \t]+|[ \t]+$/g, '') ?? undefined
}

const digest = (text: string | Buffer) => createHash('sha256').update(text).digest()

/**
 * Compared in constant time: both sides are hashed first, so neither the content nor the length of
 * the configured secret shows in how long a wrong guess takes.
 *
 * A header's value arrives one character per byte, while the configured secret is text: a secret
 * beyond ASCII sent as UTF-8 (curl, a shell script) reached here as other characters and never
 * matched. Its bytes are compared too, as well as its characters (what fetch sends of such a secret).
 */
export function assertSecret(presented: string | undefined, expected: string): void {
  if (!presented) throw new ApiError('invalid_secret', 'send the internal secret as "Authorization: Bearer <secret>" or "X-Internal-Secret"')
  const asText = timingSafeEqual(digest(presented), digest(expected))
  // Only a value of bytes (as every header is) is read as bytes: latin1 would cut a wider character to one.
  const asBytes = /^[\x00-\xff]*$/.test(presented) && timingSafeEqual(digest(Buffer.from(presented, 'latin1')), digest(Buffer.from(expected, 'utf8')))
  if (!(asText || asBytes)) throw new ApiError('invalid_secret', 'the internal secret does not match')
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
