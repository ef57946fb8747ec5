import { t } from 'elysia'
import { EpochMs, Id, Nullish, OptionalEndUserId, OptionalText, Properties } from '../shared/model'

/** W3C trace context ids: lowercase or uppercase hex; all zeros is the "invalid" id. */
const TraceId = t.String({ pattern: '^(?!0{32})[0-9a-fA-F]{32}$' })
const SpanId = t.String({ pattern: '^(?!0{16})[0-9a-fA-F]{16}$' })
/** The "invalid" span id, which some tracing clients (Jaeger's among them) send as a root's parent. */
export const NO_SPAN_ID = '0000000000000000'

export const Span = t.Object({
  traceId: TraceId,
  spanId: SpanId,
  /** Absent, null, "" or all zeros for a root span. */
  parentSpanId: Nullish(t.Union([SpanId, t.Literal(''), t.Literal(NO_SPAN_ID)])),
  /** Any length: a name past 1 KB is cut by the service, not refused (it often holds a URL path). */
  name: t.String({ minLength: 1 }),
  kind: Nullish(t.Union([t.Literal('internal'), t.Literal('server'), t.Literal('client'), t.Literal('producer'), t.Literal('consumer')])),
  startTimeMs: EpochMs,
  endTimeMs: EpochMs,
  status: Nullish(
    t.Object({
      code: t.Union([t.Literal('unset'), t.Literal('ok'), t.Literal('error')]),
      message: OptionalText,
    }),
  ),
  attributes: Properties,
  events: Nullish(t.Array(t.Object({ name: t.String(), timeMs: EpochMs, attributes: Properties }), { maxItems: 1000 })),
})

/** POST /spans/batch. */
export const SpanBatchBody = t.Object({
  sessionId: Nullish(Id),
  endUserId: OptionalEndUserId,
  spans: t.Array(Span, { minItems: 1, maxItems: 1000 }),
})

export type SpanBatchBody = typeof SpanBatchBody.static
