import { sql } from 'drizzle-orm'
import { rowsOf, type Database, type Orm } from '../../db'
import type { Sink } from '../../sink'
import { alreadyStoredOf } from '../shared/insert'
import { storedRow } from '../sessions/touch'
import { sortedBy } from '../shared/rows'
import { jsonParam } from '../shared/values'
import { issueDeltas, issueUsers, type IssueDelta } from './issues'
import type { OccurrenceRow } from './service'

/**
 * Occurrences and their Issues, in one sink because an Issue may only count what was stored now:
 * occurrences already stored (a resend) return nothing from the insert and count nothing. Every
 * commit takes its rows in the same order (occurrences, then Issue users, then Issues, each sorted
 * by key), so concurrent commits never wait on each other in a circle.
 */
export const errorEventsSink: Sink<OccurrenceRow> = {
  name: 'error_events',
  async write(tx, rows) {
    const unique = sortedBy(rows.map(storedRow), (r) => `${r.projectId}\n${r.contentHash}`, { lastWins: true })
    const inserted = await tx.execute(sql`
      insert into error_events (project_id, content_hash, issue_id, session_id, end_user_id, name, message, stack, frames, url, level,
        handled, release, context, timestamp)
      select e."projectId", e."contentHash", e."issueId", e."sessionId", e."endUserId", e.name, e.message, e.stack, e.frames, e.url, e.level,
        e.handled, e.release, e.context, to_timestamp(e.timestamp / 1000.0)
      from jsonb_to_recordset(${jsonParam(unique)}::jsonb) as e(
        "projectId" uuid, "contentHash" text, "issueId" uuid, "sessionId" text, "endUserId" text, name text, message text, stack text,
        frames jsonb, url text, level text, handled boolean, release text, context jsonb, timestamp float8)
      on conflict do nothing
      returning project_id::text as "projectId", content_hash as "contentHash"`)
    const stored = new Set(rowsOf<{ projectId: string; contentHash: string }>(inserted).map((r) => `${r.projectId}\n${r.contentHash}`))
    const fresh = unique.filter((r) => stored.has(`${r.projectId}\n${r.contentHash}`))
    const alreadyStored = alreadyStoredOf(rows, fresh.map(({ projectId }) => ({ projectId, n: 1 })))
    await answerStoredIssues(tx, rows, unique, stored)
    if (fresh.length === 0) return alreadyStored

    // A person counts once per Issue: only the pairs this insert added (not one already stored, here or
    // by a concurrent commit, which this insert waits for) add to `affected_users`. A device that is
    // an alias (auth-aware identify) is counted as its person, so a person's devices meet on one key,
    // even in commits running at once; sorted by it, the order every commit locks in. A device made
    // an alias after its reports has its rows moved by the commit making the alias (issuePeopleSink);
    // the commit holds the project's identity lock shared (see ReadsAliases), so no alias is made
    // between this read of them and its end, which that commit's move would not see.
    const users = issueUsers(fresh)
    const addedUsers = new Map<string, number>()
    if (users.length > 0) {
      const added = await tx.execute(sql`
        insert into issue_end_users (project_id, issue_id, end_user_id, first_seen_at)
        select u."projectId", u."issueId", coalesce(a.end_user_id, u."endUserId") as person, to_timestamp(min(u.at) / 1000.0)
        from jsonb_to_recordset(${jsonParam(users)}::jsonb) as u("projectId" uuid, "issueId" uuid, "endUserId" text, at float8)
        left join lateral (
          select end_user_id from end_user_aliases where project_id = u."projectId" and alias_id = u."endUserId" offset 0
        ) a on true
        group by u."projectId", u."issueId", person
        order by u."projectId", u."issueId", person
        on conflict do nothing
        returning project_id::text as "projectId", issue_id::text as "issueId"`)
      for (const { projectId, issueId } of rowsOf<{ projectId: string; issueId: string }>(added)) {
        addedUsers.set(`${projectId}\n${issueId}`, (addedUsers.get(`${projectId}\n${issueId}`) ?? 0) + 1)
      }
    }

    // Counted whatever the Issue's status; whether an occurrence reopens a resolved one is decided after.
    const deltas = issueDeltas(fresh, addedUsers)
    const upserted = await tx.execute(sql`
      insert into issues as i (project_id, issue_id, fingerprint, title, culprit, level, status, is_regression,
        first_seen_at, last_seen_at, occurrences, affected_users, first_release, last_release)
      select d."projectId", d."issueId", d.fingerprint, d.title, d.culprit, d.level, 'open', false,
        to_timestamp(d."firstAt" / 1000.0), to_timestamp(d."lastAt" / 1000.0), d.count, d."newUsers", d."firstRelease", d."lastRelease"
      from jsonb_to_recordset(${jsonParam(deltas)}::jsonb) as d(
        "projectId" uuid, "issueId" uuid, fingerprint text, title text, culprit text, level text,
        "firstAt" float8, "lastAt" float8, count bigint, "newUsers" bigint, "firstRelease" text, "lastRelease" text)
      on conflict (project_id, issue_id) do update set
        first_seen_at = least(i.first_seen_at, excluded.first_seen_at),
        last_seen_at = greatest(i.last_seen_at, excluded.last_seen_at),
        occurrences = i.occurrences + excluded.occurrences,
        affected_users = i.affected_users + excluded.affected_users,
        title = case when ${LATEST} then excluded.title else i.title end,
        culprit = case when ${LATEST} then coalesce(excluded.culprit, i.culprit) else i.culprit end,
        level = case when ${LATEST} then excluded.level else i.level end,
        first_release = coalesce(i.first_release, excluded.first_release),
        last_release = coalesce(i.last_release, excluded.last_release)
      returning project_id::text as "projectId", issue_id::text as "issueId", status`)
    await withReleasesInTime(tx, deltas)
    const resolved = new Set(
      rowsOf<{ projectId: string; issueId: string; status: string }>(upserted).flatMap((r) => (r.status === 'resolved' ? [`${r.projectId}\n${r.issueId}`] : [])),
    )
    const recurring = fresh.filter((o) => resolved.has(`${o.projectId}\n${o.issueId}`))
    if (recurring.length > 0) await reopenRecurring(tx, recurring)
    return alreadyStored
  },
}

/**
 * Sets each row's `issueId`, which the route answers, to the Issue of the occurrence stored under its
 * key: a resend is stored once, as it first came, and may group elsewhere now (its release's maps
 * were uploaded since, or the client kept the uuid and changed the words), so the Issue computed
 * for it may not exist. Rows that lost to a later one of the same key in this commit take that one's
 * Issue; the stored Issues of the others are read, which only a resend costs.
 */
async function answerStoredIssues(tx: Orm, rows: OccurrenceRow[], unique: readonly Omit<OccurrenceRow, 'ofSession'>[], stored: ReadonlySet<string>): Promise<void> {
  const keyOf = (r: { projectId: string; contentHash: string }) => `${r.projectId}\n${r.contentHash}`
  const issueOf = new Map(unique.filter((r) => stored.has(keyOf(r))).map((r) => [keyOf(r), r.issueId] as const))
  const resent = unique.filter((r) => !stored.has(keyOf(r))).map(({ projectId, contentHash }) => ({ projectId, contentHash }))
  if (resent.length > 0) {
    const found = await tx.execute(sql`
      select e.project_id::text as "projectId", e.content_hash as "contentHash", e.issue_id::text as "issueId"
      from jsonb_to_recordset(${jsonParam(resent)}::jsonb) as r("projectId" uuid, "contentHash" text)
      join error_events e on e.project_id = r."projectId" and e.content_hash = r."contentHash"`)
    for (const r of rowsOf<{ projectId: string; contentHash: string; issueId: string }>(found)) issueOf.set(keyOf(r), r.issueId)
  }
  for (const row of rows) row.issueId = issueOf.get(keyOf(row)) ?? row.issueId
}

/**
 * The first and last release of Issues to which this commit brings occurrences naming one: those of
 * the earliest and latest occurrence that names one, whichever commit brought it (at a tie of times,
 * the lower and the higher release, see releaseOrder). The Issue's own
 * first and last seen do not tell, being those of any occurrence, with a release or not: a release
 * is compared with the stored occurrences that name one, made before it (after it), which the
 * Issue's index finds walking back (forth) from its time. Run after the upsert, which holds the
 * Issues: a commit that waited for it sees what the one before stored.
 */
async function withReleasesInTime(tx: Orm, deltas: readonly IssueDelta[]): Promise<void> {
  const named = deltas.filter((d) => d.firstReleaseAt !== null)
  if (named.length === 0) return
  // Scalar subqueries, not `exists`: Postgres drops the order and limit of an `exists`, and walked
  // the Issue's occurrences from its first, all of them when its early ones name no release.
  // A stored occurrence made in the same millisecond comes first (last) when its release is the lower
  // (higher) as bytes, as releaseOrder orders them: else the commit that came last would decide.
  await tx.execute(sql`
    update issues i set
      first_release = case when (
          select e.timestamp from error_events e where e.project_id = i.project_id and e.issue_id = i.issue_id
            and e.timestamp < to_timestamp(d."firstReleaseAt" / 1000.0) and e.release is not null order by e.timestamp desc limit 1) is null
        and (
          select e.timestamp from error_events e where e.project_id = i.project_id and e.issue_id = i.issue_id
            and e.timestamp = to_timestamp(d."firstReleaseAt" / 1000.0) and e.release collate "C" < d."firstRelease" collate "C" limit 1) is null
        then d."firstRelease" else i.first_release end,
      last_release = case when (
          select e.timestamp from error_events e where e.project_id = i.project_id and e.issue_id = i.issue_id
            and e.timestamp > to_timestamp(d."lastReleaseAt" / 1000.0) and e.release is not null order by e.timestamp limit 1) is null
        and (
          select e.timestamp from error_events e where e.project_id = i.project_id and e.issue_id = i.issue_id
            and e.timestamp = to_timestamp(d."lastReleaseAt" / 1000.0) and e.release collate "C" > d."lastRelease" collate "C" limit 1) is null
        then d."lastRelease" else i.last_release end
    from jsonb_to_recordset(${jsonParam(named)}::jsonb) as d(
      "projectId" uuid, "issueId" uuid, "firstRelease" text, "lastRelease" text, "firstReleaseAt" float8, "lastReleaseAt" float8)
    where i.project_id = d."projectId" and i.issue_id = d."issueId"`)
}

/**
 * Whether the commit's latest occurrence of an Issue is later than the stored Issue's (whose title,
 * level and culprit are its latest's): by time, then, made in the same millisecond, by title, level
 * and culprit as bytes (`collate "C"`), as latestOrder orders a batch's.
 */
const LATEST = sql.raw(`(excluded.last_seen_at > i.last_seen_at or (excluded.last_seen_at = i.last_seen_at and
  (excluded.title collate "C", excluded.level collate "C", coalesce(excluded.culprit, '') collate "C")
    >= (i.title collate "C", i.level collate "C", coalesce(i.culprit, '') collate "C")))`)

/**
 * An occurrence of a resolved Issue made at or after the resolution reopens it as a regression; one
 * made before it (sent late, from a tracker's outbox) only counts. An ignored Issue stays ignored.
 *
 * When it was made is told by the client's clock, which may run minutes or hours off the server's
 * that resolved the Issue: a clock behind would hide a regression, one ahead reopen the Issue for an
 * error from before its fix. So the client's time is moved by how far its session's clock is off,
 * as its replay shows it (a chunk's receipt less its last event's time, the least of them: the one
 * sent soonest), and it is never later than the report's receipt. Occurrence times are whole
 * milliseconds, so the resolution is compared at that precision. The Issues are locked by the
 * upsert before, so a resolution cannot come between.
 */
async function reopenRecurring(tx: Orm, occurrences: readonly OccurrenceRow[]): Promise<void> {
  const made = occurrences.map(({ projectId, issueId, sessionId, timestamp, receivedAt }) => ({ projectId, issueId, sessionId, timestamp, receivedAt }))
  await tx.execute(sql`
    with made as (
      select o."projectId", o."issueId", max(least(o.timestamp + coalesce(clock.behind, 0), o."receivedAt")) as at
      from jsonb_to_recordset(${jsonParam(made)}::jsonb) as o("projectId" uuid, "issueId" uuid, "sessionId" text, timestamp float8, "receivedAt" float8)
      left join lateral (
        select min(extract(epoch from c.received_at - c.last_timestamp) * 1000)::float8 as behind
        from replay_chunks c where c.project_id = o."projectId" and c.session_id = o."sessionId") clock on true
      group by o."projectId", o."issueId")
    update issues i set status = 'open', is_regression = true, resolved_at = null
    from made
    where i.project_id = made."projectId" and i.issue_id = made."issueId" and i.status = 'resolved'
      and (i.resolved_at is null or made.at >= extract(epoch from date_trunc('milliseconds', i.resolved_at)) * 1000)`)
}

export type IssueStatus = 'open' | 'resolved' | 'ignored'

/**
 * For the dashboard: marks an Issue open, resolved or ignored. Resolving clears the regression
 * mark; the next occurrence reopens the Issue and sets it again. False when there is no such Issue.
 */
export async function setIssueStatus(db: Database, projectId: string, issueId: string, status: IssueStatus): Promise<boolean> {
  const updated = await db.rows(sql`
    update issues set status = ${status},
      resolved_at = case when ${status} = 'resolved' then now() else null end,
      is_regression = case when ${status} = 'resolved' then false else is_regression end
    where project_id = ${projectId} and issue_id = ${issueId}
    returning issue_id`)
  return updated.length > 0
}
