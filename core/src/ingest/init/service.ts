import type { Caller } from '../../http/auth'
import type { ClientFacts } from '../sessions/client'
import type { SessionTouches } from '../sessions/touch'
import { sessionText } from '../shared/text'
import type { InitBody } from './model'

/** The session and end user an init call creates (or touches); an end user without an id gets one. */
export function initRows(body: InitBody, caller: Caller, client: ClientFacts, now: number, newId: () => string): SessionTouches & { endUserId: string } {
  const endUserId = body.endUserId ?? newId()
  return {
    endUserId,
    sessions: [
      {
        projectId: caller.projectId,
        sessionId: body.sessionId,
        environment: caller.environment,
        endUserId,
        firstAt: now,
        lastAt: now,
        entryUrl: sessionText(body.entryURL),
        entryAt: body.entryURL ? now : null,
        referrer: sessionText(body.referrer),
        ...client.userAgent,
        geo: client.geo,
        sdkVersion: sessionText(body.sdkVersion),
      },
    ],
    endUsers: [{ projectId: caller.projectId, endUserId, at: now, geo: client.geo }],
  }
}
