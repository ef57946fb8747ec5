import type { Caller } from '../../http/auth'
import { clampTimestamp } from '../shared/values'
import { ofSessionRows, sessionTouches, type OfSessionRow, type SessionTouches } from '../sessions/touch'
import type { LogBatchBody } from './model'
import { requestContentHashes } from '../shared/rows'
import { LOG_URL_LIMIT_BYTES, MESSAGE_LIMIT_BYTES, optionalText, SHORT_LIMIT_BYTES, STACK_LIMIT_BYTES, truncateUtf8 } from '../shared/text'

export interface LogRow extends OfSessionRow {
  projectId: string
  contentHash: string
  sessionId: string
  endUserId: string | null
  level: string
  message: string
  stack: string | null
  url: string | null
  userAgent: string | null
  timestamp: number
}

export interface LogRows extends SessionTouches {
  logs: LogRow[]
}

/**
 * A batch of log lines as rows; a single entry comes here as a batch of one. Lines naming no end user
 * are their session's end user's, made (newEndUserId) when the session has none.
 */
export function logRows(body: LogBatchBody, caller: Caller, receivedAt: number, newEndUserId: () => string): LogRows {
  const lines = body.logs.map((entry) => ({
    entry,
    sessionId: entry.sessionId ?? body.sessionId,
    message: truncateUtf8(entry.message, MESSAGE_LIMIT_BYTES),
    stack: optionalText(entry.stack, STACK_LIMIT_BYTES),
    url: optionalText(entry.url, LOG_URL_LIMIT_BYTES),
  }))
  // The client's own time, not the clamped one, so that a retry hashes the same.
  const hashes = requestContentHashes(lines.map((l) => [l.sessionId, l.entry.timestampMs, l.entry.level, l.message, l.stack, l.url]))
  const logs = lines.map(({ entry, sessionId, message, stack, url }, i): LogRow => ({
    projectId: caller.projectId,
    contentHash: hashes[i],
    sessionId,
    endUserId: entry.endUserId ?? body.endUserId ?? null,
    level: entry.level,
    message,
    stack,
    url,
    userAgent: optionalText(entry.userAgent, SHORT_LIMIT_BYTES),
    timestamp: clampTimestamp(entry.timestampMs, receivedAt),
  }))
  const touches = sessionTouches(caller, logs.map((l) => ({ sessionId: l.sessionId, endUserId: l.endUserId, at: l.timestamp })), { newEndUserId, answered: body.sessionId })
  return { logs: ofSessionRows(logs, touches), ...touches }
}
