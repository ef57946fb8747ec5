import type { Caller } from '../../http/auth'
import { storedNames } from '../sessions/service'
import { sessionTouches, type SessionTouches } from '../sessions/touch'
import { storedText } from '../shared/values'
import type { GroupIdentifyBody } from './model'

export interface GroupRow {
  projectId: string
  groupType: string
  groupKey: string
  properties: Record<string, unknown>
  at: number
  /** The end user to link, when the body named one or a session. */
  member?: GroupMemberRow
}

/** A link to make: to the end user named, or else to the one the session has by the time it commits. */
export interface GroupMemberRow {
  projectId: string
  groupType: string
  groupKey: string
  endUserId: string | null
  sessionId: string | null
}

export interface GroupIdentifyRows extends SessionTouches {
  groups: GroupRow[]
}

export function groupIdentifyRows(body: GroupIdentifyBody, caller: Caller, now: number): GroupIdentifyRows {
  const { projectId } = caller
  // As stored (see storedText): keys stored as one are one group in mergeGroups too.
  const groupType = storedText(body.groupType)
  const groupKey = storedText(String(body.groupKey))
  const endUserId = body.endUserId ?? null
  const sessionId = body.sessionId ?? null
  // WIRE.md: the end user is linked; a client that names only the session means the session's, as
  // an identify without a userId identifies the session's end user.
  const member = endUserId || sessionId ? { projectId, groupType, groupKey, endUserId, sessionId: endUserId ? null : sessionId } : undefined
  // Named as stored (see storedNames): mergeGroups merges the identifies of a commit in memory, where
  // `plan` and `plan\0` would stay two names and the database keep whichever the merge put last.
  const properties = storedNames(body.groupProperties ?? {})
  return {
    groups: [{ projectId, groupType, groupKey, properties, at: now, ...(member && { member }) }],
    ...sessionTouches(caller, [{ sessionId, endUserId, at: now }]),
  }
}

/** A group's identity within a commit. As JSON: a type and key may hold any character, a line break too. */
const groupKeyOf = (g: { projectId: string; groupType: string; groupKey: string }) => JSON.stringify([g.projectId, g.groupType, g.groupKey])

/** One row per group, properties merged in arrival order, sorted so that commits lock in one order. */
export function mergeGroups(rows: readonly GroupRow[]): GroupRow[] {
  const merged = new Map<string, GroupRow>()
  for (const row of rows) {
    const seen = merged.get(groupKeyOf(row))
    merged.set(groupKeyOf(row), seen ? { ...seen, properties: { ...seen.properties, ...row.properties }, at: Math.max(seen.at, row.at) } : row)
  }
  return [...merged.values()].sort((a, b) => (groupKeyOf(a) < groupKeyOf(b) ? -1 : 1))
}

export function uniqueMembers(rows: readonly GroupMemberRow[]): GroupMemberRow[] {
  const byKey = new Map(rows.map((m) => [`${groupKeyOf(m)}\n${m.endUserId === null ? `session ${m.sessionId}` : `user ${m.endUserId}`}`, m]))
  return [...byKey.keys()].sort().map((k) => byKey.get(k)!)
}
