import type { Caller } from '../../http/auth'
import { MESSAGE_LIMIT_BYTES, optionalText, SHORT_LIMIT_BYTES, truncateUtf8, URL_LIMIT_BYTES } from '../shared/text'
import { ofSessionRows, sessionTouches, type OfSessionRow, type SessionTouches } from '../sessions/touch'
import { clampTimestamp } from '../shared/values'
import type { NetworkBatchBody } from './model'

export interface NetworkErrorRow extends OfSessionRow {
  projectId: string
  sessionId: string
  requestId: string
  endUserId: string | null
  url: string
  method: string
  status: number | null
  statusText: string | null
  durationMs: number | null
  errorType: string | null
  errorMessage: string | null
  errorName: string | null
  spanName: string | null
  spanStatus: string | null
  attributes: Record<string, unknown> | null
  startTime: number | null
  timestamp: number
}

export interface NetworkRows extends SessionTouches {
  errors: NetworkErrorRow[]
}

/**
 * Failed or slow requests as rows; a single entry comes here as a batch of one. Entries naming no end
 * user are their session's end user's, made (newEndUserId) when the session has none.
 */
export function networkRows(body: NetworkBatchBody, caller: Caller, receivedAt: number, newEndUserId: () => string): NetworkRows {
  const errors = body.errors.map(
    (entry): NetworkErrorRow => ({
      projectId: caller.projectId,
      sessionId: entry.sessionId ?? body.sessionId,
      requestId: entry.requestId,
      endUserId: entry.endUserId ?? body.endUserId ?? null,
      url: truncateUtf8(entry.url, URL_LIMIT_BYTES),
      method: truncateUtf8(entry.method.toUpperCase(), SHORT_LIMIT_BYTES),
      status: entry.status ?? null,
      statusText: optionalText(entry.statusText, SHORT_LIMIT_BYTES),
      durationMs: entry.duration ?? null,
      errorType: optionalText(entry.errorType, SHORT_LIMIT_BYTES),
      errorMessage: optionalText(entry.errorMessage, MESSAGE_LIMIT_BYTES),
      errorName: optionalText(entry.errorName, SHORT_LIMIT_BYTES),
      spanName: optionalText(entry.spanName, SHORT_LIMIT_BYTES),
      spanStatus: entry.spanStatus ?? null,
      attributes: entry.attributes ?? null,
      startTime: entry.startTimeMs == null ? null : clampTimestamp(entry.startTimeMs, receivedAt),
      timestamp: clampTimestamp(entry.timestampMs, receivedAt),
    }),
  )
  const touches = sessionTouches(caller, errors.map((e) => ({ sessionId: e.sessionId, endUserId: e.endUserId, at: e.timestamp })), { newEndUserId, answered: body.sessionId })
  return { errors: ofSessionRows(errors, touches), ...touches }
}
