import type { Caller } from '../../http/auth'
import type { ClientFacts } from '../sessions/client'
import type { EndUserTouch, SessionTouch } from '../sessions/service'
import { stripNul } from '../shared/values'
import type { InitBody } from './model'

const MAX_URL = 2048
const text = (value: string | null | undefined): string | null => (value ? stripNul(value.slice(0, MAX_URL)) : null)

/** The session and end user an init call creates (or touches); an end user without an id gets one. */
export function initRows(body: InitBody, caller: Caller, client: ClientFacts, now: number, newId: () => string): { endUserId: string; session: SessionTouch; endUser: EndUserTouch } {
  const endUserId = body.endUserId ?? newId()
  return {
    endUserId,
    session: {
      projectId: caller.projectId,
      sessionId: body.sessionId,
      environment: caller.environment,
      endUserId,
      firstAt: now,
      lastAt: now,
      entryUrl: text(body.entryURL),
      entryAt: body.entryURL ? now : null,
      referrer: text(body.referrer),
      ...client.userAgent,
      geo: client.geo,
      sdkVersion: text(body.sdkVersion),
    },
    endUser: { projectId: caller.projectId, endUserId, at: now, geo: client.geo },
  }
}
