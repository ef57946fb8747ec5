import type { Caller } from '../../http/auth'
import type { EndUserTouch } from '../sessions/service'
import { endUserTouches, type SessionEndUserTouch, type SessionTouches } from '../sessions/touch'
import { NAME_LIMIT_BYTES, truncateUtf8 } from '../shared/text'
import { canonicalUuid, clampTimestamp } from '../shared/values'
import type { CustomEventBatchBody } from './model'

export interface EventRow {
  projectId: string
  uuid: string
  environment: string
  sessionId: string
  endUserId: string | null
  eventName: string
  properties: Record<string, unknown> | null
  timestamp: number
}

/**
 * An event of a request that named no end user: it takes its session's, which the commit decides
 * (`ofSession.endUserId`, see sessionEventsSink).
 */
export interface SessionEventRow {
  event: EventRow
  ofSession: SessionEndUserTouch
}

export interface CustomEventRows extends SessionTouches {
  /** The events of a request that named its end user. */
  events: EventRow[]
  /** Those of a request that named none (`ofSession` is then set). */
  eventsOfSession: SessionEventRow[]
}

/**
 * A batch of custom events as rows. An event without `uuid` gets one here (newUuid); a client that
 * wants its retries stored once sends its own (the tracker does). Without an end user named, the
 * events are their session's end user's, made (newEndUserId) only when the session has none.
 */
export function customEventRows(
  body: CustomEventBatchBody,
  caller: Caller,
  receivedAt: number,
  newUuid: () => string,
  newEndUserId: () => string,
): CustomEventRows {
  const named = body.endUserId ?? null
  const events = body.events.map((event) => ({
    projectId: caller.projectId,
    uuid: event.uuid ? eventUuid(caller.projectId, event.uuid) : newUuid(),
    environment: caller.environment,
    sessionId: body.sessionId,
    endUserId: named,
    eventName: truncateUtf8(event.eventName, NAME_LIMIT_BYTES),
    properties: event.eventProperties ?? null,
    timestamp: clampTimestamp(event.timestamp, receivedAt),
  }))
  const times = events.map((e) => e.timestamp)
  const firstAt = Math.min(...times)
  const lastAt = Math.max(...times)
  const endUser: EndUserTouch = { projectId: caller.projectId, endUserId: named ?? newEndUserId(), firstAt, at: lastAt }
  const { endUsers, ofSession } = endUserTouches(body.sessionId, named !== null, endUser)
  return {
    // One test per request: the events of a request that named its end user go as they are.
    ...(ofSession ? { events: [], eventsOfSession: events.map((event) => ({ event, ofSession })) } : { events, eventsOfSession: [] }),
    sessions: [{ projectId: caller.projectId, sessionId: body.sessionId, environment: caller.environment, endUserId: endUser.endUserId, firstAt, lastAt }],
    endUsers,
    ofSession,
  }
}

/**
 * The key an event is stored under (the events table's is project and uuid) for the id its client
 * sent. A UUID is itself, lowercase with dashes. Any other string names one: the name-based UUID
 * (version 5) of that string in the project's namespace, the project id, so that a resend with the
 * same id is stored once, as with a UUID.
 */
export function eventUuid(projectId: string, id: string): string {
  return canonicalUuid(id) ?? Bun.randomUUIDv5(id, projectId)
}
