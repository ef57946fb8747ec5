import { sql } from 'drizzle-orm'
import { rowsOf, type Database, type Orm } from '../../db'
import type { Sink } from '../../sink'
import { sortedBy } from '../shared/rows'
import { jsonParam } from '../shared/values'
import { LIVE_VIEWER_TTL_SECONDS, LIVE_WINDOW_SECONDS, lastChangePerWindow, quietWindowsPerProject, type PresenceChange } from './service'

/*
 * Presence lives in the database, on the database's clock, so that every core process sharing it
 * agrees on who is live whatever its own clock says.
 */

const liveSince = sql`now() - make_interval(secs => ${LIVE_WINDOW_SECONDS})`

/** The sessions of some changes, once each and sorted: rows are locked in the order they are looked up. */
const sessionsOf = (changes: readonly PresenceChange[]) =>
  jsonParam(
    sortedBy(
      changes.map((c) => ({ projectId: c.projectId, sessionId: c.sessionId })),
      (s) => `${s.projectId}\n${s.sessionId}`,
      { lastWins: true },
    ),
  )

/*
 * The statements below find their rows one key at a time through the primary key (a lateral
 * lookup, kept from being flattened into a join by `for update` or `offset 0`) and act on those
 * rows by ctid. Joined plainly with jsonb_to_recordset, whose row count the planner guesses at 100,
 * sessions and presence are easily scanned whole, on every heartbeat commit.
 */

/**
 * Heartbeats and goodbyes of windows, then the end time of their sessions: cleared when a window
 * beats (a page back from the back/forward cache), set when the last live window said goodbye.
 * Of the sessions phase, named to sort after the sessions sink, which creates the session rows; it
 * then locks those rows first, so the windows of one session change one commit at a time, and "was
 * that the last window?" is answered right even when two windows leave at once through two processes.
 */
export const presenceSink: Sink<PresenceChange> = {
  name: 'sessions_presence',
  phase: 'sessions',
  async write(tx, changes) {
    await tx.execute(sql`
      select s.ctid from jsonb_to_recordset(${sessionsOf(changes)}::jsonb) as t("projectId" uuid, "sessionId" text)
      cross join lateral (
        select ctid from sessions where project_id = t."projectId" and session_id = t."sessionId" for no key update
      ) s`)
    const last = lastChangePerWindow(changes)
    const beats = last.filter((c) => c.kind === 'beat')
    const ends = last.filter((c) => c.kind === 'end')
    if (beats.length > 0) {
      await tx.execute(sql`
        insert into presence as p (project_id, session_id, window_id, end_user_id, url, last_seen_at)
        select b."projectId", b."sessionId", b."windowId", b."endUserId", b.url, now()
        from jsonb_to_recordset(${jsonParam(beats)}::jsonb) as b("projectId" uuid, "sessionId" text, "windowId" text, "endUserId" text, url text)
        on conflict (project_id, session_id, window_id) do update set
          last_seen_at = excluded.last_seen_at,
          end_user_id = coalesce(excluded.end_user_id, p.end_user_id),
          url = coalesce(excluded.url, p.url)`)
      await tx.execute(sql`
        update sessions set ended_at = null where ctid = any(array(
          select s.ctid from jsonb_to_recordset(${sessionsOf(beats)}::jsonb) as t("projectId" uuid, "sessionId" text)
          cross join lateral (
            select ctid from sessions where project_id = t."projectId" and session_id = t."sessionId" and ended_at is not null for update
          ) s))`)
    }
    if (ends.length > 0) await endWindows(tx, ends)
    // Last, after every other lock of presence and sessions this commit takes: see forgetQuietWindows.
    await forgetQuietWindows(tx, [...new Set(last.map((c) => c.projectId))].sort(), QUIET_WINDOWS_PER_COMMIT)
  },
}

/** The goodbyes of windows, then the end of the sessions that have no window left. */
async function endWindows(tx: Orm, ends: PresenceChange[]) {
  // A goodbye is activity of the session it leaves, as the sessions sink would take it (a session's
  // times that are only a receipt are replaced), but not of a session that has ended: see withoutActivity.
  await tx.execute(sql`
    update sessions set
      started_at = case when times_are_receipt then now() else least(started_at, now()) end,
      last_activity_at = case when times_are_receipt then now() else greatest(last_activity_at, now()) end,
      times_are_receipt = null
    where ctid = any(array(
      select s.ctid from jsonb_to_recordset(${sessionsOf(ends)}::jsonb) as t("projectId" uuid, "sessionId" text)
      cross join lateral (
        select ctid from sessions where project_id = t."projectId" and session_id = t."sessionId" and ended_at is null for update
      ) s))`)
  await tx.execute(sql`
    delete from presence where ctid = any(array(
      select p.ctid from jsonb_to_recordset(${jsonParam(ends)}::jsonb) as e("projectId" uuid, "sessionId" text, "windowId" text)
      cross join lateral (
        select ctid from presence where project_id = e."projectId" and session_id = e."sessionId" and window_id = e."windowId" for update
      ) p))`)
  const ending = sql`jsonb_to_recordset(${sessionsOf(ends)}::jsonb) as t("projectId" uuid, "sessionId" text)`
  // Windows that went quiet without a goodbye (a crash, a killed tab) are tidied with their session.
  await tx.execute(sql`
    delete from presence where ctid = any(array(
      select p.ctid from ${ending}
      cross join lateral (
        select ctid from presence where project_id = t."projectId" and session_id = t."sessionId" and last_seen_at < ${liveSince} for update
      ) p))`)
  // A repeated goodbye keeps the first end time; a session with a window still live is not ended.
  // The end is never before the last activity, which is the client's clock (a clock minutes ahead).
  await tx.execute(sql`
    update sessions set ended_at = greatest(now(), last_activity_at) where ctid = any(array(
      select s.ctid from ${ending}
      cross join lateral (
        select ctid from sessions where project_id = t."projectId" and session_id = t."sessionId" and ended_at is null
          and not exists (select 1 from presence p where p.project_id = t."projectId" and p.session_id = t."sessionId")
        for update
      ) s))`)
}

/**
 * At most this many quiet windows are forgotten by a commit of heartbeats and goodbyes, shared among
 * its projects (see quietWindowsPerProject): that commit is what its callers wait for. A backlog goes
 * over several commits, and the sweep (sweepQuietWindows) takes what they leave.
 */
export const QUIET_WINDOWS_PER_COMMIT = 100
/**
 * At most this many quiet windows are forgotten by one transaction of the sweep, shared among the
 * projects it covers: a few milliseconds of holding the session rows it ends on Postgres, and of the
 * embedded database, which runs one transaction at a time, between two of the writer's commits.
 */
export const QUIET_WINDOWS_PER_SWEEP_BATCH = 1_000

/**
 * Forgets the windows of `projects` (sorted) that no longer count as live and said no goodbye (a
 * crash, a killed tab, a session expired while idle, whose tracker sends none, a beat that reached
 * core after the goodbye and revived the session), at most `budget` of them, oldest quiet first, and
 * ends the sessions left without a window: nothing else would ever remove those windows, nor end
 * those sessions. Run by every commit of presence for its projects, and by sweepQuietWindows for
 * every project. Nobody reads the windows: a window that beats again is inserted anew, and revives
 * its session. Says how many windows it forgot.
 *
 * Never waits: run last of the sessions phase, so that a commit waiting for a row held here does not
 * hold a lock this one still needs, and taking only rows nobody else holds (`skip locked`). Like the
 * other commits, a window's session row first, then the window: a session another commit holds (it
 * beats a window, or forgets them itself) keeps its quiet windows for a later commit, which ends it.
 * A window whose session row no longer exists is forgotten all the same.
 */
async function forgetQuietWindows(tx: Orm, projects: readonly string[], budget: number): Promise<number> {
  const perProject = quietWindowsPerProject(budget, projects.length)
  // The quiet windows are read without a lock; each is taken only when its session row is (the
  // lateral `s` runs before `p`, which reads its result) and only if it is still quiet by then.
  const [{ forgotten, windows }] = rowsOf<{ forgotten: string | null; windows: number }>(
    await tx.execute(sql`
      with gone as (
        delete from presence where ctid = any(array(
          select p.ctid from jsonb_array_elements_text(${jsonParam(projects)}::jsonb) as t("projectId")
          cross join lateral (
            select project_id, session_id, window_id from presence where project_id = t."projectId"::uuid and last_seen_at < ${liveSince}
            order by last_seen_at limit ${perProject}
          ) q
          cross join lateral (
            select q.session_id
            where exists (select 1 from sessions where project_id = q.project_id and session_id = q.session_id for no key update skip locked)
              or not exists (select 1 from sessions where project_id = q.project_id and session_id = q.session_id)
            offset 0
          ) s
          cross join lateral (
            select ctid from presence where project_id = q.project_id and session_id = s.session_id and window_id = q.window_id
              and last_seen_at < ${liveSince} for update skip locked
          ) p))
        returning project_id, session_id, last_seen_at
      )
      select (jsonb_agg(jsonb_build_object('projectId', project_id, 'sessionId', session_id, 'lastSeenAt', last_seen_at)))::text as forgotten,
        coalesce(sum(windows), 0)::int as windows
      from (select project_id, session_id, max(last_seen_at) as last_seen_at, count(*) as windows from gone group by project_id, session_id) w`),
  )
  if (forgotten) await endSessionsLeftWithoutWindows(tx, forgotten)
  return Number(windows)
}

/** At most this many projects are covered by one transaction of the sweep; the next takes the others. */
const PROJECTS_PER_SWEEP_BATCH = 100

export interface PresenceSweepResult {
  /** Quiet windows forgotten (their sessions ended where they left none). */
  windows: number
  /** Transactions it took, each forgetting at most QUIET_WINDOWS_PER_SWEEP_BATCH windows. */
  batches: number
}

/**
 * What the commits of a project do to its quiet windows (forgetQuietWindows), for every project, and
 * above all those that may get no further commit to do it: no heartbeat nor goodbye any more (night
 * time, a site taken down or deployed, a spike of traffic over). Without it their last sessions stayed
 * open, and their windows stored, until then. It forgets every window quiet when it runs, whatever
 * their number, in transactions of a bounded share each (QUIET_WINDOWS_PER_SWEEP_BATCH), until one
 * forgets nothing, or `keepGoing` says to stop (a stop of core; a sweep that has run its interval).
 * One transaction per sweep, of at most a hundred windows per project, let a project gone quiet all at
 * once (10,000 windows) read as live for 100 minutes.
 *
 * No transaction waits for a row another holds: several core processes sweep the same database at
 * once, each taking what the others do not hold. A transaction that forgets nothing found nothing
 * quiet, or only windows whose rows others hold: another process sweeping them, which goes on, or a
 * commit of their sessions, a moment, after which the next sweep of any process takes them.
 */
export async function sweepQuietWindows(db: Database, keepGoing: () => boolean = () => true): Promise<PresenceSweepResult> {
  const result: PresenceSweepResult = { windows: 0, batches: 0 }
  do {
    const windows = await sweepBatch(db)
    result.batches += 1
    result.windows += windows
    if (windows === 0) break
  } while (keepGoing())
  return result
}

/**
 * One transaction of the sweep: the projects whose oldest window is quiet, oldest quiet first, found by
 * index probes (presence_last_seen_idx): the next project that has windows after each one found, then
 * its oldest window. That is two probes per project with windows, not a scan of presence, which holds
 * a row per window live across all projects, nor of every project.
 */
function sweepBatch(db: Database): Promise<number> {
  return db.transaction(async (tx) => {
    const quiet = rowsOf<{ projectId: string }>(
      await tx.execute(sql`
        with recursive present(project_id) as (
          (select project_id from presence order by project_id limit 1)
          union all
          select (select project_id from presence where project_id > present.project_id order by project_id limit 1)
          from present where present.project_id is not null
        )
        select p.project_id::text as "projectId" from present p
        cross join lateral (select last_seen_at from presence where project_id = p.project_id order by last_seen_at limit 1) q
        where q.last_seen_at < ${liveSince}
        order by q.last_seen_at limit ${PROJECTS_PER_SWEEP_BATCH}`),
    )
    // Sorted as a commit sorts them: rows are taken in the order they are looked up.
    if (quiet.length === 0) return 0
    return forgetQuietWindows(tx, quiet.map((p) => p.projectId).sort(), QUIET_WINDOWS_PER_SWEEP_BATCH)
  })
}

/**
 * Ends the sessions whose windows were forgotten and that have no window left, when the last of those
 * windows went quiet (not now: nothing was seen of them since), never before the last activity, as a
 * goodbye would; a session ended already keeps its end. Their rows are held by this commit: no other
 * can give them a window meanwhile, and this waits for none.
 */
async function endSessionsLeftWithoutWindows(tx: Orm, forgotten: string) {
  const windows = sql`jsonb_to_recordset(${forgotten}::jsonb) as f("projectId" uuid, "sessionId" text, "lastSeenAt" timestamptz)`
  await tx.execute(sql`
    update sessions set ended_at = greatest(last_activity_at, (
      select f."lastSeenAt" from ${windows} where f."projectId" = sessions.project_id and f."sessionId" = sessions.session_id))
    where ctid = any(array(
      select s.ctid from ${windows}
      cross join lateral (
        select ctid from sessions where project_id = f."projectId" and session_id = f."sessionId" and ended_at is null
          and not exists (select 1 from presence p where p.project_id = f."projectId" and p.session_id = f."sessionId")
        offset 0
      ) s))`)
}

/**
 * The heartbeat's `liveViewer`, read for many heartbeats at once: the writer answers a whole
 * commit's heartbeats together, and their reads, made in the same turn of the event loop, become
 * one query instead of one each.
 */
export function createLiveViewerReader(db: Database) {
  let pending: { projectId: string; sessionId: string; resolve(watched: boolean): void; reject(error: unknown): void }[] = []
  const keyOf = (r: { projectId: string; sessionId: string }) => `${r.projectId}\n${r.sessionId}`
  const flush = async () => {
    const batch = pending
    pending = []
    try {
      const lookups = [...new Map(batch.map((r) => [keyOf(r), { projectId: r.projectId, sessionId: r.sessionId }])).values()]
      const watched = await db.rows<{ projectId: string; sessionId: string }>(sql`
        select t."projectId"::text as "projectId", t."sessionId"
        from jsonb_to_recordset(${jsonParam(lookups)}::jsonb) as t("projectId" uuid, "sessionId" text)
        cross join lateral (
          select 1 from sessions where project_id = t."projectId" and session_id = t."sessionId" and live_viewer_until > now() offset 0
        ) s`)
      const keys = new Set(watched.map(keyOf))
      for (const read of batch) read.resolve(keys.has(keyOf(read)))
    } catch (error) {
      for (const read of batch) read.reject(error)
    }
  }
  return (projectId: string, sessionId: string): Promise<boolean> =>
    new Promise((resolve, reject) => {
      if (pending.push({ projectId, sessionId, resolve, reject }) === 1) setImmediate(flush)
    })
}

/**
 * For the dashboard: a viewer watches the session live, for `ttlSeconds` unless renewed; while one
 * does, heartbeats answer `liveViewer: true` and the tracker flushes replay faster. Several viewers
 * each renew; the latest expiry wins. False when there is no such session.
 */
export async function registerLiveViewer(db: Database, projectId: string, sessionId: string, ttlSeconds = LIVE_VIEWER_TTL_SECONDS): Promise<boolean> {
  const updated = await db.rows(sql`
    update sessions set live_viewer_until = greatest(live_viewer_until, now() + make_interval(secs => ${ttlSeconds}))
    where project_id = ${projectId} and session_id = ${sessionId}
    returning session_id`)
  return updated.length > 0
}

/** The viewer left; another viewer's next renewal registers the session again. */
export async function unregisterLiveViewer(db: Database, projectId: string, sessionId: string): Promise<void> {
  await db.rows(sql`update sessions set live_viewer_until = null where project_id = ${projectId} and session_id = ${sessionId}`)
}

export interface LiveWindow {
  windowId: string
  url: string | null
  lastSeenAt: Date
}

/** The windows of a session that beat recently; the session is live while there is one. */
export async function liveWindows(db: Database, projectId: string, sessionId: string): Promise<LiveWindow[]> {
  const rows = await db.rows<{ window_id: string; url: string | null; last_seen_at: string | Date }>(sql`
    select window_id, url, last_seen_at from presence
    where project_id = ${projectId} and session_id = ${sessionId} and last_seen_at >= ${liveSince}
    order by window_id`)
  return rows.map((r) => ({ windowId: r.window_id, url: r.url, lastSeenAt: new Date(r.last_seen_at) }))
}

/** The project's live sessions, most recently seen first. */
export async function liveSessions(db: Database, projectId: string): Promise<string[]> {
  const rows = await db.rows<{ session_id: string }>(sql`
    select session_id from presence where project_id = ${projectId} and last_seen_at >= ${liveSince}
    group by session_id order by max(last_seen_at) desc, session_id`)
  return rows.map((r) => r.session_id)
}
