import { afterEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresDatabase, type Database, type Orm } from '@sightline/core/db'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase, engine, type TestDatabase } from '../../helpers/database'

/*
 * The presence sweep (core/src/ingest/presence/sweep.ts): a project that gets no heartbeat nor
 * goodbye any more has no commit to forget its quiet windows and end the sessions they leave; the
 * sweep does it, every tick, for every process.
 */

const SWEEP_MS = 50
const opened: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close()
})

async function sweepingCore(options: { database?: TestDatabase; log?: ReturnType<typeof memoryLogger>['log'] } = {}): Promise<TestCore> {
  const core = await startCore({ ...options, presenceSweep: { intervalMs: SWEEP_MS } })
  opened.push(core)
  return core
}

/** Exact to the microsecond, as stored. */
const micros = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000000)::bigint::text`)
const endedAt = async (db: Database, sessionId: string) =>
  (await db.rows<{ ended: string | null }>(sql`select ${micros('ended_at')} as ended from sessions where session_id = ${sessionId}`))[0].ended
const stored = async (db: Database, sessionId: string) =>
  (await db.rows<{ window_id: string }>(sql`select window_id from presence where session_id = ${sessionId} order by window_id`)).map((r) => r.window_id)
/**
 * Moves sessions and their windows `seconds` into the past, as if that much time had gone by in
 * silence, and says when each session's windows were last seen then (read as they are moved: a sweep
 * may forget them right after). Sessions first: a sweep between the two statements finds nothing quiet.
 */
async function ageAll(db: Database, sessionIds: string[], seconds: number, windowSeconds = sql`${seconds}`, executor?: Orm): Promise<Map<string, string>> {
  await db.rows(sql`
    update sessions set started_at = started_at - make_interval(secs => ${seconds}), last_activity_at = last_activity_at - make_interval(secs => ${seconds})
    where session_id in ${sessionIds}`, executor)
  const moved = await db.rows<{ session_id: string; seen: string }>(sql`
    with moved as (
      update presence set last_seen_at = last_seen_at - make_interval(secs => ${windowSeconds}) where session_id in ${sessionIds}
      returning session_id, last_seen_at
    )
    select session_id, ${micros('max(last_seen_at)')} as seen from moved group by session_id`, executor)
  return new Map(moved.map((r) => [r.session_id, r.seen]))
}
async function until(done: () => Promise<boolean>, what: string, ms = 5_000) {
  const deadline = performance.now() + ms
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(20)
  }
}
const beat = (core: TestCore, sessionId: string, windowId = 'w-1') => core.post('/api/ingestion/heartbeat', { sessionId, windowId })

describe('presence sweep', () => {
  test('a session whose only window went quiet, in a project with no further presence traffic, is ended at its last beat; a live one is untouched', async () => {
    const core = await sweepingCore()
    const db = core.database.db
    expect((await beat(core, 's-quiet')).status).toBe(200)
    expect((await beat(core, 's-live')).status).toBe(200)
    const seen = (await ageAll(db, ['s-quiet'], 120)).get('s-quiet')

    // No heartbeat nor goodbye from here on.
    await until(async () => (await stored(db, 's-quiet')).length === 0, 'the quiet window forgotten')
    // When its window was last seen, two minutes ago: not when the sweep came.
    expect(await endedAt(db, 's-quiet')).toBe(seen!)
    expect(await stored(db, 's-live')).toEqual(['w-1'])
    expect(await endedAt(db, 's-live')).toBeNull()
  })

  test('several processes sweeping one database, a backlog over several sweeps: every quiet session ends once, at its own last beat', async () => {
    const log = memoryLogger('warn')
    const first = await sweepingCore({ log: log.log })
    // On Postgres another process would have a pool of its own; the embedded database takes one process.
    const beside = engine === 'postgres' ? postgresDatabase(first.database.url!) : undefined
    if (beside) opened.push(beside)
    await sweepingCore({ database: beside ? { db: beside, close: async () => {} } : first.database, log: log.log })
    const db = first.database.db

    // More quiet windows than one sweep takes of a project (100), two windows a session.
    const sessions = Array.from({ length: 130 }, (_, i) => `b-${i}`)
    await Promise.all(sessions.flatMap((s) => [beat(first, s, 'w-a'), beat(first, s, 'w-b')]))
    // Each session its own age, from 100 s on; the sessions' activity older than all of them.
    const seen = await ageAll(db, sessions, 300, sql`100 + substr(session_id, 3)::int`)
    expect(seen.size).toBe(130)

    await until(async () => (await db.rows(sql`select 1 from presence where session_id like 'b-%'`)).length === 0, 'every quiet window forgotten', 10_000)
    const ended = await db.rows<{ session_id: string; ended: string | null }>(sql`select session_id, ${micros('ended_at')} as ended from sessions where session_id like 'b-%'`)
    expect(ended).toHaveLength(130)
    for (const row of ended) expect(row.ended).toBe(seen.get(row.session_id)!)
    expect(log.lines).toEqual([])
  })

  test('stopping core during a sweep waits for it to finish', async () => {
    const database = await createTestDatabase()
    opened.push(database)
    const core = await startCore({ database, presenceSweep: { intervalMs: SWEEP_MS } })
    const db = database.db
    await beat(core, 's-stop')

    // A transaction holding presence whole, in which the window goes quiet: the next sweep waits for
    // it (on the embedded database, which runs one transaction at a time, for the transaction itself),
    // then finds that window. (There, the stop's own statements also queue behind the sweep's: what
    // tells a stop that waits from one that does not is seen on Postgres.)
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding!: (seen: string | undefined) => void
    const held = new Promise<string | undefined>((resolve) => (holding = resolve))
    const holder = db.orm.transaction(async (tx) => {
      await tx.execute(sql`lock table presence in access exclusive mode`)
      holding((await ageAll(db, ['s-stop'], 120, undefined, tx)).get('s-stop'))
      await released
    })
    const seen = await held
    let closed = false
    let closing: Promise<unknown> | undefined
    try {
      expect(seen).toBeDefined()
      // Several ticks: a sweep is under way, waiting; one, not one a tick.
      await Bun.sleep(SWEEP_MS * 6)
      if (engine === 'postgres') {
        const waiting = sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
        expect(await db.rows(waiting)).toEqual([{ n: 1 }])
      }
      closing = core.close().then(() => (closed = true))
      await Bun.sleep(SWEEP_MS * 6)
      expect(closed).toBe(false)
    } finally {
      release()
      await holder
    }
    await closing
    // The sweep under way was finished, not cut short, before the stop was done.
    expect(await stored(db, 's-stop')).toEqual([])
    expect(await endedAt(db, 's-stop')).toBe(seen!)
  })

  test('a failing sweep is logged once per failure streak and tried again at every tick', async () => {
    const log = memoryLogger('info')
    const core = await sweepingCore({ log: log.log })
    const db = core.database.db
    await beat(core, 's-fail')
    // The sweep's deletes refused, as a database that does not answer would fail it.
    await db.rows(sql`create function refuse() returns trigger language plpgsql as $$ begin raise exception 'presence refused'; end $$`)
    await db.rows(sql`create trigger refuse before delete on presence for each row execute function refuse()`)
    const seen = (await ageAll(db, ['s-fail'], 120)).get('s-fail')
    await Bun.sleep(SWEEP_MS * 8)
    const sweepLines = () => log.lines.map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('presence sweep'))
    expect(sweepLines().map((l) => [l.level, l.msg])).toEqual([['warn', 'presence sweep failed; trying again at every tick']])
    expect(sweepLines()[0].error).toContain('presence refused')

    expect(await stored(db, 's-fail')).toEqual(['w-1'])
    await db.rows(sql`drop trigger refuse on presence`)
    await until(async () => (await stored(db, 's-fail')).length === 0, 'the quiet window forgotten once the sweep works again')
    expect(await endedAt(db, 's-fail')).toBe(seen!)
    expect(sweepLines().map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'presence sweep failed; trying again at every tick'],
      ['info', 'presence sweep works again'],
    ])
  })
})
