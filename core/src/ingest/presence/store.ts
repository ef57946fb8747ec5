import { sql } from 'drizzle-orm'
import type { Database } from '../../db'
import type { Sink } from '../../writer'
import { jsonParam } from '../shared/values'
import { LIVE_VIEWER_TTL_SECONDS, LIVE_WINDOW_SECONDS, lastChangePerWindow, type PresenceChange } from './service'

/*
 * Presence lives in the database, on the database's clock, so that every core process sharing it
 * agrees on who is live whatever its own clock says.
 */

const liveSince = sql`now() - make_interval(secs => ${LIVE_WINDOW_SECONDS})`

/**
 * Heartbeats and goodbyes of windows, then each touched session's end time: set when its last
 * live window said goodbye, cleared when a window beats again (a page restored from the back/forward
 * cache). Named to run after the sessions sink: its upsert has locked the session rows, so the
 * windows of one session change one commit at a time and "was that the last window?" is answered
 * right even when two windows leave at once through two processes.
 */
export const presenceSink: Sink<PresenceChange> = {
  name: 'sessions_presence',
  async write(tx, changes) {
    const last = lastChangePerWindow(changes)
    const beats = last.filter((c) => c.kind === 'beat')
    const ends = last.filter((c) => c.kind === 'end')
    if (beats.length > 0) {
      await tx.execute(sql`
        insert into presence as p (project_id, session_id, window_id, end_user_id, url, last_seen_at)
        select b."projectId", b."sessionId", b."windowId", b."endUserId", b.url, now()
        from json_to_recordset(${jsonParam(beats)}::json) as b("projectId" uuid, "sessionId" text, "windowId" text, "endUserId" text, url text)
        on conflict (project_id, session_id, window_id) do update set
          last_seen_at = excluded.last_seen_at,
          end_user_id = coalesce(excluded.end_user_id, p.end_user_id),
          url = coalesce(excluded.url, p.url)`)
    }
    if (ends.length > 0) {
      await tx.execute(sql`
        delete from presence p using json_to_recordset(${jsonParam(ends)}::json) as e("projectId" uuid, "sessionId" text, "windowId" text)
        where p.project_id = e."projectId" and p.session_id = e."sessionId" and p.window_id = e."windowId"`)
    }
    const sessions = [...new Map(last.map((c) => [`${c.projectId}\n${c.sessionId}`, { projectId: c.projectId, sessionId: c.sessionId }])).values()]
    const touched = sql`json_to_recordset(${jsonParam(sessions)}::json) as t("projectId" uuid, "sessionId" text)`
    // Windows that went quiet without a goodbye (a crash, a killed tab) are tidied with their session.
    await tx.execute(sql`
      delete from presence p using ${touched}
      where p.project_id = t."projectId" and p.session_id = t."sessionId" and p.last_seen_at < ${liveSince}`)
    // Only rows whose end time changes are written; a repeated goodbye keeps the first end time.
    await tx.execute(sql`
      update sessions s set ended_at = case when x.live then null else coalesce(s.ended_at, now()) end
      from (
        select t."projectId", t."sessionId", exists (
          select 1 from presence p where p.project_id = t."projectId" and p.session_id = t."sessionId" and p.last_seen_at >= ${liveSince}
        ) as live
        from ${touched}
      ) x
      where s.project_id = x."projectId" and s.session_id = x."sessionId" and (x.live = (s.ended_at is not null))`)
  },
}

/** Whether a dashboard viewer is registered for the session now (the heartbeat's `liveViewer`). */
export async function hasLiveViewer(db: Database, projectId: string, sessionId: string): Promise<boolean> {
  const [row] = await db.rows<{ watched: boolean }>(sql`
    select coalesce(live_viewer_until > now(), false) as watched from sessions where project_id = ${projectId} and session_id = ${sessionId}`)
  return row?.watched ?? false
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
