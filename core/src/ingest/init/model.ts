import { t } from 'elysia'
import { Id, OptionalEndUserId, OptionalText } from '../shared/model'

/** POST /init (fielded, deprecated). */
export const InitBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  entryURL: OptionalText,
  referrer: OptionalText,
  sdkVersion: t.Optional(t.Union([t.String({ maxLength: 256 }), t.Null()])),
})

export type InitBody = typeof InitBody.static
