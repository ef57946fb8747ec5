import { sortedBy } from '../shared/rows'
import type { OccurrenceRow } from './service'

/** What newly stored occurrences add to one Issue. */
export interface IssueDelta {
  projectId: string
  issueId: string
  fingerprint: string
  /** Title, culprit and level of the latest occurrence. */
  title: string
  culprit: string | null
  level: string
  firstAt: number
  lastAt: number
  count: number
  /** End users this commit added to the Issue. */
  newUsers: number
  firstRelease: string | null
  lastRelease: string | null
}

const issueKey = (r: { projectId: string; fingerprint: string }) => `${r.projectId}\n${r.fingerprint}`

/**
 * One delta per Issue, in fingerprint order (the order commits lock Issues in). `addedUsers` counts
 * the end users newly recorded per Issue, by `projectId \n issueId`. The first and last release are
 * those of the earliest and latest occurrence that has one, whatever order the batch lists them in
 * (as the upsert keeps a release an Issue has when a later commit brings none).
 */
export function issueDeltas(occurrences: readonly OccurrenceRow[], addedUsers: ReadonlyMap<string, number> = new Map()): IssueDelta[] {
  const deltas = new Map<string, IssueDelta>()
  const releaseTimes = new Map<string, { first: number; last: number }>()
  for (const o of occurrences) {
    const key = issueKey(o)
    const seen = deltas.get(key)
    if (!seen) {
      deltas.set(key, {
        projectId: o.projectId,
        issueId: o.issueId,
        fingerprint: o.fingerprint,
        title: o.title,
        culprit: o.culprit,
        level: o.level,
        firstAt: o.timestamp,
        lastAt: o.timestamp,
        count: 1,
        newUsers: addedUsers.get(`${o.projectId}\n${o.issueId}`) ?? 0,
        firstRelease: o.release,
        lastRelease: o.release,
      })
      if (o.release !== null) releaseTimes.set(key, { first: o.timestamp, last: o.timestamp })
      continue
    }
    seen.count++
    seen.firstAt = Math.min(seen.firstAt, o.timestamp)
    if (o.timestamp >= seen.lastAt) Object.assign(seen, { lastAt: o.timestamp, title: o.title, culprit: o.culprit ?? seen.culprit, level: o.level })
    if (o.release === null) continue
    const times = releaseTimes.get(key)
    if (!times) {
      Object.assign(seen, { firstRelease: o.release, lastRelease: o.release })
      releaseTimes.set(key, { first: o.timestamp, last: o.timestamp })
      continue
    }
    if (o.timestamp < times.first) [seen.firstRelease, times.first] = [o.release, o.timestamp]
    if (o.timestamp >= times.last) [seen.lastRelease, times.last] = [o.release, o.timestamp]
  }
  return sortedBy([...deltas.values()], issueKey)
}

/** The (Issue, end user) pairs of the occurrences, each once with its earliest time, in key order. */
export function issueUsers(occurrences: readonly OccurrenceRow[]): { projectId: string; issueId: string; endUserId: string; at: number }[] {
  const pairs = new Map<string, { projectId: string; issueId: string; endUserId: string; at: number }>()
  for (const o of occurrences) {
    if (!o.endUserId) continue
    const key = `${o.projectId}\n${o.issueId}\n${o.endUserId}`
    const seen = pairs.get(key)
    if (!seen || o.timestamp < seen.at) pairs.set(key, { projectId: o.projectId, issueId: o.issueId, endUserId: o.endUserId, at: o.timestamp })
  }
  return sortedBy([...pairs.values()], (p) => `${p.projectId}\n${p.issueId}\n${p.endUserId}`)
}
