import { t } from 'elysia'
import { EpochMs, Integer, itemOrBatch, OptionalEndUserId, OptionalText, Properties } from '../shared/model'

const entryFields = {
  /** The client's id of the request: with the session it makes a resend a no-op. */
  requestId: t.String({ minLength: 1, maxLength: 256 }),
  url: t.String(),
  /** Any token a page may pass to fetch or XHR (the standard sets no length): a long one is shortened, not refused. */
  method: t.String({ minLength: 1 }),
  /** 0 or null when no response came (network failure, CORS, abort). */
  status: t.Optional(t.Union([Integer({ minimum: 0, maximum: 999 }), t.Null()])),
  statusText: OptionalText,
  /** Milliseconds. */
  duration: t.Optional(t.Union([t.Number({ minimum: 0, maximum: 1e10 }), t.Null()])),
  timestampMs: EpochMs,
  endUserId: OptionalEndUserId,
  errorType: OptionalText,
  errorMessage: OptionalText,
  errorName: OptionalText,
  startTimeMs: t.Optional(t.Union([EpochMs, t.Null()])),
  spanName: OptionalText,
  spanStatus: t.Optional(t.Union([t.Literal('error'), t.Literal('success'), t.Literal('slow'), t.Null()])),
  attributes: Properties,
}

const bodies = itemOrBatch('errors', entryFields, 1000)
/** POST /network, one entry (fielded). */
export const NetworkEntryBody = bodies.item
/** POST /network, a batch (fielded): `{sessionId, errors: [...]}`. */
export const NetworkBatchBody = bodies.batch

export type NetworkEntryBody = typeof NetworkEntryBody.static
export type NetworkBatchBody = typeof NetworkBatchBody.static
