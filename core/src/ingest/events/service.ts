import type { Caller } from '../../http/auth'
import type { SessionTouches } from '../sessions/touch'
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

export interface CustomEventRows extends SessionTouches {
  events: EventRow[]
}

/**
 * A batch of custom events as rows. An event without `uuid` gets one here (newUuid); a client that
 * wants its retries stored once sends its own (the tracker does).
 */
export function customEventRows(body: CustomEventBatchBody, caller: Caller, receivedAt: number, newUuid: () => string): CustomEventRows {
  const endUserId = body.endUserId ?? null
  const events = body.events.map((event) => ({
    projectId: caller.projectId,
    uuid: event.uuid ? eventUuid(caller.projectId, event.uuid) : newUuid(),
    environment: caller.environment,
    sessionId: body.sessionId,
    endUserId,
    eventName: truncateUtf8(event.eventName, NAME_LIMIT_BYTES),
    properties: event.eventProperties ?? null,
    timestamp: clampTimestamp(event.timestamp, receivedAt),
  }))
  const times = events.map((e) => e.timestamp)
  const firstAt = Math.min(...times)
  const lastAt = Math.max(...times)
  return {
    events,
    sessions: [{ projectId: caller.projectId, sessionId: body.sessionId, environment: caller.environment, endUserId, firstAt, lastAt }],
    endUsers: endUserId ? [{ projectId: caller.projectId, endUserId, firstAt, at: lastAt }] : [],
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
