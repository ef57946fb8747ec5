import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresDatabase, type Database } from '@sightline/core/db'
import type { PresenceChange } from '@sightline/core/ingest/presence/service'
import { presenceSink, QUIET_WINDOWS_PER_COMMIT, QUIET_WINDOWS_PER_SWEEP_BATCH, sweepQuietWindows } from '@sightline/core/ingest/presence/store'
import { createTestDatabase, engine } from '../../helpers/database'

/*
 * A backlog of quiet windows (core/src/ingest/presence/store.ts): a project whose traffic stops all at
 * once (a spike over, the site deployed) leaves thousands of windows quiet together. One sweep ends
 * them all, in transactions of a bounded share each; a commit of heartbeats takes a bounded share too.
 * The windows are inserted directly, their last beats already minutes old.
 */

const opened: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close()
})

async function database(): Promise<{ db: Database; url?: string }> {
  const created = await createTestDatabase()
  opened.push(created)
  // What each statement deleting from presence deleted, and each session's end as it was set.
  await created.db.rows(sql`create table forgotten_per_statement (windows int not null)`)
  await created.db.rows(sql`create function log_forgotten() returns trigger language plpgsql as $$
    begin insert into forgotten_per_statement select count(*) from gone; return null; end $$`)
  await created.db.rows(sql`create trigger log_forgotten after delete on presence referencing old table as gone for each statement execute function log_forgotten()`)
  await created.db.rows(sql`create table session_ends (session_id text not null, ended_at timestamptz not null)`)
  await created.db.rows(sql`create function log_end() returns trigger language plpgsql as $$
    begin insert into session_ends values (new.session_id, new.ended_at); return null; end $$`)
  await created.db.rows(sql`create trigger log_end after update on sessions for each row
    when (old.ended_at is null and new.ended_at is not null) execute function log_end()`)
  return created
}

/** Exact to the microsecond, as stored. */
const micros = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000000)::bigint::text`)

/**
 * A project whose `sessions` sessions of `windows` windows each last beat between 100 s and some
 * minutes ago, each its own time, their activity an hour old. Says the project.
 */
async function quietProject(db: Database, prefix: string, sessions: number, windows: number): Promise<string> {
  const [{ projectId }] = await db.rows<{ projectId: string }>(sql`select gen_random_uuid()::text as "projectId"`)
  await db.rows(sql`
    insert into sessions (project_id, session_id, environment, started_at, last_activity_at)
    select ${projectId}, ${prefix} || i, 'production', now() - interval '1 hour', now() - interval '1 hour'
    from generate_series(1, ${sessions}) i`)
  await db.rows(sql`
    insert into presence (project_id, session_id, window_id, last_seen_at)
    select ${projectId}, ${prefix} || i, 'w-' || w, now() - make_interval(secs => 100 + (i * 7 + w * 13) % 400)
    from generate_series(1, ${sessions}) i, generate_series(1, ${windows}) w`)
  return projectId
}

/** When each quiet session should end: its windows' last beat (later than its last activity). */
const expectedEnds = async (db: Database) =>
  new Map(
    (await db.rows<{ session_id: string; seen: string }>(sql`
      select session_id, ${micros('max(last_seen_at)')} as seen from presence group by session_id`)).map((r) => [r.session_id, r.seen]),
  )
const quietLeft = async (db: Database) =>
  (await db.rows<{ n: number }>(sql`select count(*)::int as n from presence where last_seen_at < now() - interval '90 seconds'`))[0].n
const statements = async (db: Database) =>
  (await db.rows<{ windows: number }>(sql`select windows from forgotten_per_statement where windows > 0`)).map((r) => r.windows)
const ends = async (db: Database) =>
  db.rows<{ session_id: string; ended: string; times: number }>(sql`
    select session_id, ${micros('min(ended_at)')} as ended, count(*)::int as times from session_ends group by session_id`)

describe('a backlog of quiet windows', () => {
  test('one sweep forgets every quiet window, 2,300 across two projects, and ends each session at its last beat, a bounded share a statement', async () => {
    const { db } = await database()
    const busy = await quietProject(db, 'a-', 1_000, 2)
    await quietProject(db, 'b-', 300, 1)
    // Sessions with a window still live beside their quiet one: their quiet window goes, they stay open.
    await db.rows(sql`insert into presence (project_id, session_id, window_id, last_seen_at) select ${busy}, 'a-' || i, 'w-live', now() from generate_series(1, 5) i`)
    const expected = await expectedEnds(db)

    const swept = await sweepQuietWindows(db)
    expect(await quietLeft(db)).toBe(0)
    expect(swept.windows).toBe(2_300)
    expect(await db.rows(sql`select session_id, window_id from presence order by session_id`)).toEqual(
      ['a-1', 'a-2', 'a-3', 'a-4', 'a-5'].map((session_id) => ({ session_id, window_id: 'w-live' })),
    )
    const ended = await ends(db)
    expect(ended).toHaveLength(1_300 - 5)
    for (const row of ended) {
      expect(row.times).toBe(1)
      expect(row.ended).toBe(expected.get(row.session_id)!)
    }
    expect(await db.rows(sql`select 1 from sessions where ended_at is null`)).toHaveLength(5)

    // In several transactions, none forgetting more than its share.
    const forgotten = await statements(db)
    expect(forgotten.reduce((a, b) => a + b, 0)).toBe(2_300)
    expect(forgotten.length).toBeGreaterThanOrEqual(3)
    expect(Math.max(...forgotten)).toBeLessThanOrEqual(QUIET_WINDOWS_PER_SWEEP_BATCH)

    // Nothing left: a further sweep is one transaction that writes nothing.
    expect(await sweepQuietWindows(db)).toEqual({ windows: 0, batches: 1 })
  })

  test('a commit of heartbeats of many projects, each with a backlog, forgets a bounded share in all, some of each project', async () => {
    const { db } = await database()
    const projects = await Promise.all(Array.from({ length: 20 }, (_, i) => quietProject(db, `c${i}-`, 150, 1)))
    const beats: PresenceChange[] = projects.map((projectId) => ({ projectId, sessionId: 'live', windowId: 'w-1', endUserId: null, url: null, kind: 'beat' }))

    await db.transaction((tx) => presenceSink.write(tx, beats))
    const forgotten = await statements(db)
    expect(forgotten).toHaveLength(1)
    expect(forgotten[0]).toBeLessThanOrEqual(QUIET_WINDOWS_PER_COMMIT)
    const perProject = await db.rows<{ left: number }>(sql`
      select count(*)::int as left from presence where last_seen_at < now() - interval '90 seconds' group by project_id`)
    expect(perProject).toHaveLength(20)
    for (const { left } of perProject) expect(left).toBeLessThan(150)

    // What the commits leave, the sweep takes.
    await sweepQuietWindows(db)
    expect(await quietLeft(db)).toBe(0)
  })

  // The embedded database takes one process, which runs one transaction at a time.
  test.skipIf(engine !== 'postgres')('two processes sweeping a backlog at once each take what the other does not hold: every session ends once, none waits', async () => {
    const { db, url } = await database()
    const beside = postgresDatabase(url!)
    opened.push(beside)
    for (const p of ['x-', 'y-', 'z-']) await quietProject(db, p, 1_000, 2)
    const expected = await expectedEnds(db)

    const [first, second] = await Promise.all([sweepQuietWindows(db), sweepQuietWindows(beside)])
    expect(await quietLeft(db)).toBe(0)
    expect(first.windows + second.windows).toBe(6_000)
    const ended = await ends(db)
    expect(ended).toHaveLength(3_000)
    for (const row of ended) {
      expect(row.times).toBe(1)
      expect(row.ended).toBe(expected.get(row.session_id)!)
    }
    expect(Math.max(...(await statements(db)))).toBeLessThanOrEqual(QUIET_WINDOWS_PER_SWEEP_BATCH)
  })
})
