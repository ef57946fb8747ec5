import { t } from 'elysia'
import { Id, OptionalEndUserId } from '../shared/model'

/** POST /ip-info. */
export const IpInfoBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  /**
   * Taken only when it is a valid public address; the request's own address otherwise (WIRE.md): any
   * text is such an "otherwise", a long one too (a forwarded-for list a client copied), never a reason
   * to refuse the request and lose the session and end user it locates. See addressToLocate.
   */
  ip: t.Optional(t.Union([t.String(), t.Null()])),
})

export type IpInfoBody = typeof IpInfoBody.static
