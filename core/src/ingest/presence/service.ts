import type { Caller } from '../../http/auth'
import { optionalText, URL_LIMIT_BYTES } from '../shared/text'
import type { HeartbeatBody, SessionEndBody } from './model'
import { sessionTouches, type SessionTouches } from '../sessions/touch'

/** A session is live while any of its windows has beaten within this many seconds. */
export const LIVE_WINDOW_SECONDS = 90
/** How long a dashboard viewer counts as watching after registering, unless it renews. */
export const LIVE_VIEWER_TTL_SECONDS = 60

/** A window's heartbeat, or its goodbye. */
export interface PresenceChange {
  projectId: string
  sessionId: string
  /** '' for a tracker that does not tell its windows apart. */
  windowId: string
  endUserId: string | null
  url: string | null
  kind: 'beat' | 'end'
}

export interface PresenceRows extends SessionTouches {
  presence: PresenceChange[]
}

export function presenceRows(body: HeartbeatBody | SessionEndBody, kind: PresenceChange['kind'], caller: Caller, receivedAt: number): PresenceRows {
  const windowId = body.windowId ?? ''
  const endUserId = body.endUserId ?? null
  const url = 'url' in body ? optionalText(body.url, URL_LIMIT_BYTES) : null
  const touches = sessionTouches(caller, [{ sessionId: body.sessionId, endUserId, at: receivedAt, windowId: windowId || undefined }])
  return {
    presence: [{ projectId: caller.projectId, sessionId: body.sessionId, windowId, endUserId, url, kind }],
    ...(kind === 'beat' ? touches : withoutActivity(touches)),
  }
}

/**
 * A goodbye's session touch shows no activity: the presence sink takes the goodbye for activity
 * itself, unless the session has ended already (a goodbye sent again later, by a relay's retry or
 * through another process, would move the end and last activity to its receipt).
 */
const withoutActivity = ({ sessions, endUsers }: SessionTouches): SessionTouches => ({
  sessions: sessions.map((s) => ({ ...s, noActivity: true })),
  endUsers,
})

const windowKey = (c: PresenceChange) => `${c.projectId}\n${c.sessionId}\n${c.windowId}`

/**
 * What a commit's changes leave per window: the last one that arrived wins (a heartbeat and the
 * goodbye of the same window can share a commit). Sorted, so that commits lock rows in one order.
 */
export function lastChangePerWindow(changes: readonly PresenceChange[]): PresenceChange[] {
  const last = new Map<string, PresenceChange>()
  for (const change of changes) {
    const seen = last.get(windowKey(change))
    last.set(windowKey(change), { ...change, endUserId: change.endUserId ?? seen?.endUserId ?? null, url: change.url ?? seen?.url ?? null })
  }
  return [...last.values()].sort((a, b) => (windowKey(a) < windowKey(b) ? -1 : 1))
}

/**
 * How many quiet windows each of `projects` projects may have forgotten by one statement that may
 * forget `budget` in all: an even share, and at least one each, so that every project covered moves
 * on however many there are. Bounds a statement's work (and so how long it holds the session rows it
 * ends) by the budget, or by the number of projects where they outnumber it.
 */
export function quietWindowsPerProject(budget: number, projects: number): number {
  return Math.max(1, Math.floor(budget / Math.max(1, projects)))
}
