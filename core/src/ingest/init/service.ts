import type { Caller } from '../../http/auth'
import type { ClientFacts } from '../sessions/client'
import type { EndUserTouch } from '../sessions/service'
import type { SessionTouches } from '../sessions/touch'
import { sessionText } from '../shared/text'
import type { InitBody } from './model'

/**
 * The end user of an init that named none. `made` was made for the request and is the one the session
 * gets only if it has none yet; else the session's is touched and answered (a retried init, the next
 * page of the session, or another init of it at the same time must not make another). The sink fills
 * in `endUserId` inside the commit, so the route reads it once the write has resolved.
 */
export interface SessionEndUserTouch {
  sessionId: string
  made: EndUserTouch
  endUserId?: string
}

export interface InitRows extends SessionTouches {
  /** The body's end user, or the one made for it. */
  endUserId: string
  /** Set when the body named no end user: the end user is the session's (initEndUserSink). */
  ofSession: SessionEndUserTouch | null
}

/** The session and end user an init call creates (or touches); an end user without an id gets one. */
export function initRows(body: InitBody, caller: Caller, client: ClientFacts, now: number, newId: () => string): InitRows {
  const endUser: EndUserTouch = { projectId: caller.projectId, endUserId: body.endUserId ?? newId(), at: now, geo: client.geo }
  const entryUrl = sessionText(body.entryURL)
  return {
    endUserId: endUser.endUserId,
    ofSession: body.endUserId ? null : { sessionId: body.sessionId, made: endUser },
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
    endUsers: body.endUserId ? [endUser] : [],
  }
}
