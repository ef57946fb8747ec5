import { t } from 'elysia'
import { EpochMs, Id, OptionalEndUserId, Properties } from '../shared/model'

const OptionalText = t.Optional(t.Union([t.String(), t.Null()]))

const entryFields = {
  /** The client's id of the request: with the session it makes a resend a no-op. */
  requestId: t.String({ minLength: 1, maxLength: 256 }),
  url: t.String(),
  method: t.String({ minLength: 1, maxLength: 32 }),
  /** 0 or null when no response came (network failure, CORS, abort). */
  status: t.Optional(t.Union([t.Integer({ minimum: 0, maximum: 999 }), t.Null()])),
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

/** POST /network, one entry (fielded). */
export const NetworkEntryBody = t.Object({ ...entryFields, sessionId: Id })

/** POST /network, a batch (fielded): `{sessionId, errors: [...]}`. */
export const NetworkBatchBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  errors: t.Array(t.Object({ ...entryFields, sessionId: t.Optional(Id) }), { minItems: 1, maxItems: 1000 }),
})

export type NetworkEntryBody = typeof NetworkEntryBody.static
export type NetworkBatchBody = typeof NetworkBatchBody.static
