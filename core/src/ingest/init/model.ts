import { t } from 'elysia'
import { Id, OptionalEndUserId, OptionalText } from '../shared/model'

/** POST /init (fielded, deprecated). */
export const InitBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  entryURL: OptionalText,
  referrer: OptionalText,
  // Any length, as on /events: the session keeps what sessionText cuts, a long build string is no reason to refuse.
  sdkVersion: OptionalText,
})

export type InitBody = typeof InitBody.static
