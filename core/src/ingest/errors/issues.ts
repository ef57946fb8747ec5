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
  /** When the occurrences of `firstRelease` and `lastRelease` were made: the Issue's own first and last seen may be of occurrences without a release. */
  firstReleaseAt: number | null
  lastReleaseAt: number | null
}

const issueKey = (r: { projectId: string; fingerprint: string }) => `${r.projectId}\n${r.fingerprint}`

/**
 * One delta per Issue, in fingerprint order (the order commits lock Issues in). `addedUsers` counts
 * the end users newly recorded per Issue, by `projectId \n issueId`. The first and last release are
 * those of the earliest and latest occurrence that has one (see releaseOrder for a tie), whatever
 * order the batch lists them in, with the times those were made: the sink weighs them against the
 * occurrences stored before.
 */
export function issueDeltas(occurrences: readonly OccurrenceRow[], addedUsers: ReadonlyMap<string, number> = new Map()): IssueDelta[] {
  const deltas = new Map<string, IssueDelta>()
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
        firstReleaseAt: o.release === null ? null : o.timestamp,
        lastReleaseAt: o.release === null ? null : o.timestamp,
      })
      continue
    }
    seen.count++
    seen.firstAt = Math.min(seen.firstAt, o.timestamp)
    if (o.timestamp > seen.lastAt || (o.timestamp === seen.lastAt && latestOrder(o, seen) >= 0)) {
      Object.assign(seen, { lastAt: o.timestamp, title: o.title, culprit: o.culprit ?? seen.culprit, level: o.level })
    }
    if (o.release === null) continue
    if (seen.firstReleaseAt === null || releaseOrder(o.timestamp, o.release, seen.firstReleaseAt, seen.firstRelease!) < 0) {
      Object.assign(seen, { firstRelease: o.release, firstReleaseAt: o.timestamp })
    }
    if (seen.lastReleaseAt === null || releaseOrder(o.timestamp, o.release, seen.lastReleaseAt, seen.lastRelease!) > 0) {
      Object.assign(seen, { lastRelease: o.release, lastReleaseAt: o.timestamp })
    }
  }
  return sortedBy([...deltas.values()], issueKey)
}

/**
 * Orders occurrences that name a release by time, then, made in the same millisecond, by release as
 * UTF-8 bytes (Postgres's `collate "C"`, which the sink compares stored ones with): without the
 * second key the first release of a tie was whichever commit or batch position came last, so two
 * cores could store different ones for the same reports.
 */
export function releaseOrder(at: number, release: string, otherAt: number, otherRelease: string): number {
  return at - otherAt || Buffer.compare(Buffer.from(release), Buffer.from(otherRelease))
}

/**
 * Orders occurrences made in the same millisecond for the Issue's title, level and culprit, which are
 * the latest's: by those, as UTF-8 bytes, the higher the later (as the sink's LATEST compares stored
 * ones), so that which commit, core or batch position came last never decides.
 */
function latestOrder(a: Described, b: Described): number {
  const bytes = ({ title, level, culprit }: Described) => Buffer.from(`${title}\0${level}\0${culprit ?? ''}`)
  return Buffer.compare(bytes(a), bytes(b))
}

type Described = Pick<OccurrenceRow, 'title' | 'level' | 'culprit'>

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
