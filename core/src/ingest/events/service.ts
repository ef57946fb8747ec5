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

/** Names the project's namespace (see eventUuid) for ids with a lone surrogate. */
const ILL_FORMED_IDS = 'sightline: event ids with a lone surrogate, as UTF-16 code units'
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * The key an event is stored under (the events table's is project and uuid) for the id its client
 * sent. A UUID is itself, lowercase with dashes. Any other string names one: the name-based UUID
 * (version 5) of that string in the project's namespace, the project id, so that a resend with the
 * same id is stored once, as with a UUID. The name is hashed as UTF-8, where a lone surrogate (an id
 * cut inside an emoji) has no encoding and becomes U+FFFD: ids with one are hashed by their UTF-16
 * code units instead, each as it came, in a namespace of their own (no UTF-8 name can then meet one),
 * so that ids that differ are stored apart. Well-formed ids keep the key they always had: a resend
 * from before this rule is still stored once. NUL is no special case: hashed as it came, never dropped.
 */
export function eventUuid(projectId: string, id: string): string {
  const uuid = canonicalUuid(id)
  if (uuid) return uuid
  if (!LONE_SURROGATE.test(id)) return Bun.randomUUIDv5(id, projectId)
  return Bun.randomUUIDv5(Buffer.from(id, 'utf16le'), Bun.randomUUIDv5(ILL_FORMED_IDS, projectId))
}
