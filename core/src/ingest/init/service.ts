import type { Caller } from '../../http/auth'
import type { ClientFacts } from '../sessions/client'
import type { EndUserTouch } from '../sessions/service'
import { endUserTouches, type SessionTouches } from '../sessions/touch'
import { sessionText } from '../shared/text'
import type { InitBody } from './model'

export interface InitRows extends SessionTouches {
  /** The body's end user, or the one made for it (the answer only if the session takes it, see `ofSession`). */
  endUserId: string
}

/** The session and end user an init call creates (or touches); an end user without an id gets one. */
export function initRows(body: InitBody, caller: Caller, client: ClientFacts, now: number, newId: () => string): InitRows {
  const endUser: EndUserTouch = { projectId: caller.projectId, endUserId: body.endUserId ?? newId(), at: now, geo: client.geo }
  const entryUrl = sessionText(body.entryURL)
  return {
    endUserId: endUser.endUserId,
    ...endUserTouches(body.sessionId, !!body.endUserId, endUser),
    sessions: [
      {
        projectId: caller.projectId,
        sessionId: body.sessionId,
        environment: caller.environment,
        endUserId: endUser.endUserId,
        firstAt: now,
        lastAt: now,
        entryUrl,
        // Only with a URL kept: an entry time without one would hold the entry against a real page's.
        entryAt: entryUrl ? now : null,
        referrer: sessionText(body.referrer),
        ...client.userAgent,
        geo: client.geo,
        sdkVersion: sessionText(body.sdkVersion),
      },
    ],
  }
}
