import { t } from 'elysia'
import { Id, OptionalEndUserId } from '../shared/model'

/** No length limit: the service cuts what it keeps (a URL can carry kilobytes of state), the body limit bounds the rest. */
const OptionalText = t.Optional(t.Union([t.String(), t.Null()]))

/** POST /init (fielded, deprecated). */
export const InitBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  entryURL: OptionalText,
  referrer: OptionalText,
  sdkVersion: t.Optional(t.Union([t.String({ maxLength: 256 }), t.Null()])),
})

export type InitBody = typeof InitBody.static
