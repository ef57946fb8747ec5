import { t } from 'elysia'
import { Id, OptionalEndUserId } from '../shared/model'

/** POST /ip-info. */
export const IpInfoBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  /** Taken only when it is a valid public address; the request's own address otherwise. */
  ip: t.Optional(t.Union([t.String({ maxLength: 64 }), t.Null()])),
})

export type IpInfoBody = typeof IpInfoBody.static
