import type { Caller } from '../../http/auth'
import { ApiError } from '../../errors'
import { MESSAGE_LIMIT_BYTES, NAME_LIMIT_BYTES, optionalText, truncateUtf8 } from '../shared/text'
import { sessionTouches, type SessionTouches } from '../sessions/touch'
import { clampTimestamp } from '../shared/values'
import type { SpanBatchBody } from './model'

export interface SpanRow {
  projectId: string
  traceId: string
  spanId: string
  parentSpanId: string | null
  sessionId: string | null
  endUserId: string | null
  name: string
  kind: string
  startTime: number
  endTime: number
  durationMs: number
  statusCode: string
  statusMessage: string | null
  attributes: Record<string, unknown> | null
  events: { name: string; timeMs: number; attributes?: Record<string, unknown> | null }[] | null
}

export interface SpanRows extends SessionTouches {
  spans: SpanRow[]
}

/**
 * Spans as rows, ids in lowercase as W3C trace context writes them. A span may not end before it
 * starts; a start more than 24 h ahead is moved to the receive time with its duration kept.
 */
export function spanRows(body: SpanBatchBody, caller: Caller, receivedAt: number): SpanRows {
  const sessionId = body.sessionId ?? null
  const endUserId = body.endUserId ?? null
  const spans = body.spans.map((span, i): SpanRow => {
    const durationMs = span.endTimeMs - span.startTimeMs
    if (durationMs < 0) {
      throw new ApiError('validation_failed', `/spans/${i}/endTimeMs: the span ends before it starts`, { path: `/spans/${i}/endTimeMs` })
    }
    const startTime = clampTimestamp(span.startTimeMs, receivedAt)
    return {
      projectId: caller.projectId,
      traceId: span.traceId.toLowerCase(),
      spanId: span.spanId.toLowerCase(),
      parentSpanId: span.parentSpanId ? span.parentSpanId.toLowerCase() : null,
      sessionId,
      endUserId,
      name: truncateUtf8(span.name, NAME_LIMIT_BYTES),
      kind: span.kind ?? 'internal',
      startTime,
      endTime: startTime + durationMs,
      durationMs,
      statusCode: span.status?.code ?? 'unset',
      statusMessage: optionalText(span.status?.message, MESSAGE_LIMIT_BYTES),
      attributes: span.attributes ?? null,
      events: span.events?.length ? span.events.map((e) => ({ ...e, name: truncateUtf8(e.name, NAME_LIMIT_BYTES) })) : null,
    }
  })
  const sightings = sessionId ? spans.map((s) => ({ sessionId, endUserId, at: s.startTime })) : []
  return { spans, ...sessionTouches(caller, sightings) }
}
