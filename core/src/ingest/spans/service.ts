import type { Caller } from '../../http/auth'
import { ApiError } from '../../errors'
import { MESSAGE_LIMIT_BYTES, NAME_LIMIT_BYTES, optionalText, truncateUtf8 } from '../shared/text'
import { ofSessionRows, sessionTouches, type OfSessionRow, type SessionTouches } from '../sessions/touch'
import { clampTimestamp } from '../shared/values'
import { NO_SPAN_ID, type SpanBatchBody } from './model'

export interface SpanRow extends OfSessionRow {
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
 * starts. Its times are stored as spanTimes says; its duration is the stored end less the stored
 * start, which the store takes from the stored times (spansSink).
 */
export function spanRows(body: SpanBatchBody, caller: Caller, receivedAt: number, newEndUserId: () => string): SpanRows {
  const sessionId = body.sessionId ?? null
  const endUserId = body.endUserId ?? null
  const spans = body.spans.map((span, i): SpanRow => {
    if (span.endTimeMs < span.startTimeMs) {
      throw new ApiError('validation_failed', `/spans/${i}/endTimeMs: the span ends before it starts`, { path: `/spans/${i}/endTimeMs` })
    }
    const times = spanTimes(span, receivedAt)
    const spanId = span.spanId.toLowerCase()
    const parentSpanId = span.parentSpanId && span.parentSpanId !== NO_SPAN_ID ? span.parentSpanId.toLowerCase() : null
    return {
      projectId: caller.projectId,
      traceId: span.traceId.toLowerCase(),
      spanId,
      // A span named as its own parent (a client that copied its id over) is a root: kept as sent,
      // it made a loop of one for whatever walks a trace up from a span.
      parentSpanId: parentSpanId === spanId ? null : parentSpanId,
      sessionId,
      endUserId,
      name: truncateUtf8(span.name, NAME_LIMIT_BYTES),
      kind: span.kind ?? 'internal',
      startTime: times.startTime,
      endTime: times.endTime,
      statusCode: span.status?.code ?? 'unset',
      statusMessage: optionalText(span.status?.message, MESSAGE_LIMIT_BYTES),
      attributes: span.attributes ?? null,
      // Field by field: the validator drops unknown keys, but not those named like members of every
      // object (`toString`, `valueOf`), which a spread would store.
      events: span.events?.length
        ? span.events.map((e, j) => ({ name: truncateUtf8(e.name, NAME_LIMIT_BYTES), timeMs: times.eventTimes[j], attributes: e.attributes }))
        : null,
    }
  })
  // Without a session the spans still name their end user, who is created like on every other route
  // (sessionTouches then touches the end user only). Naming neither, they stay without one: an end
  // user made for them would belong to no session, and a server sending its spans would get a new
  // one with every batch. With a session and no end user, they are the session's end user's.
  const sightings = spans.map((s) => ({ sessionId, endUserId, at: s.startTime }))
  const touches = sessionTouches(caller, sightings, { newEndUserId, answered: sessionId })
  return { spans: ofSessionRows(spans, touches), ...touches }
}

type Span = SpanBatchBody['spans'][number]

/**
 * A span's times as stored, none more than 24 h ahead of receipt (clampTimestamp). A start that is
 * moves to the receive time and takes the span with it: its end and its events keep their offsets
 * from the start, since a clock that is days ahead is wrong about when, not about how long. Whatever
 * is still too far ahead after that (an end or an event days after a start that was not) is clamped
 * on its own, and the end never before the start; an event moved before 1970 is 1970.
 */
export function spanTimes(span: Pick<Span, 'startTimeMs' | 'endTimeMs' | 'events'>, receivedAt: number) {
  const startTime = clampTimestamp(span.startTimeMs, receivedAt)
  const moved = (timeMs: number) => (startTime === span.startTimeMs ? timeMs : startTime + (timeMs - span.startTimeMs))
  return {
    startTime,
    endTime: Math.max(startTime, clampTimestamp(moved(span.endTimeMs), receivedAt)),
    eventTimes: (span.events ?? []).map((e) => clampTimestamp(moved(e.timeMs), receivedAt)),
  }
}
