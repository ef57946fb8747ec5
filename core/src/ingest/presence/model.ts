import { t } from 'elysia'
import { Id, OptionalEndUserId, OptionalText } from '../shared/model'

const WindowId = t.Optional(t.Union([Id, t.Null()]))

/** POST /heartbeat, sent about every 30 s; the key is usually in the body (beacons). */
export const HeartbeatBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  windowId: WindowId,
  url: OptionalText,
})

/** POST /session-end, sent on page hide or unload. */
export const SessionEndBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  windowId: WindowId,
})

export type HeartbeatBody = typeof HeartbeatBody.static
export type SessionEndBody = typeof SessionEndBody.static
