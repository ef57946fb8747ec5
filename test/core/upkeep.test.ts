import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { embeddedDatabase, type Database } from '@sightline/core/db'
import type { PresenceChange } from '@sightline/core/ingest/presence/service'
import { presenceSink } from '@sightline/core/ingest/presence/store'
import { createLogger } from '@sightline/core/log'
import { createProject } from '@sightline/core/projects/service'
import { startServices } from '@sightline/core/services'
import { checkpointDue, startEmbeddedUpkeep, upkeepDue, type TableStats, type UpkeepRules } from '@sightline/core/upkeep'
import { migratedSnapshot } from '../helpers/database'

/**
 * The embedded database's upkeep (core/src/upkeep.ts). PGlite has neither checkpointer nor
 * autovacuum daemon, so these run on PGlite whatever database the rest of the suite uses.
 */
const log = createLogger('silent')
const POSTGRES_DEFAULTS: UpkeepRules = {
  vacuumThreshold: 50,
  vacuumScaleFactor: 0.2,
  insertThreshold: 1000,
  insertScaleFactor: 0.2,
  analyzeThreshold: 50,
  analyzeScaleFactor: 0.1,
  freezeMaxAge: 200_000_000,
  naptimeMs: 60_000,
  checkpointTimeoutMs: 300_000,
  checkpointWalBytes: (1024 * 1024 * 1024) / 1.9,
}

describe('upkeepDue: autovacuum rules', () => {
  const table = (stats: Partial<TableStats>): TableStats => ({
    name: 'presence',
    system: false,
    tuples: 1000,
    dead: 0,
    insertedSinceVacuum: 0,
    modifiedSinceAnalyze: 0,
    xidAge: 10,
    ...stats,
  })

  test('vacuum once dead rows pass 50 + 20 % of the table', () => {
    expect(upkeepDue(table({ dead: 250, modifiedSinceAnalyze: 50 }), POSTGRES_DEFAULTS)).toBeNull()
    expect(upkeepDue(table({ dead: 251 }), POSTGRES_DEFAULTS)).toBe('vacuum')
    expect(upkeepDue(table({ tuples: 0, dead: 51 }), POSTGRES_DEFAULTS)).toBe('vacuum')
  })

  test('vacuum once inserts since the last pass 1000 + 20 % of the table (an insert-only table is frozen as it grows)', () => {
    expect(upkeepDue(table({ insertedSinceVacuum: 1200 }), POSTGRES_DEFAULTS)).toBeNull()
    expect(upkeepDue(table({ insertedSinceVacuum: 1201 }), POSTGRES_DEFAULTS)).toBe('vacuum')
    expect(upkeepDue(table({ insertedSinceVacuum: 1_000_000 }), { ...POSTGRES_DEFAULTS, insertThreshold: -1 })).toBeNull()
  })

  test('analyze once changes since the last pass 50 + 10 % of the table; catalogs are not analyzed', () => {
    expect(upkeepDue(table({ modifiedSinceAnalyze: 150 }), POSTGRES_DEFAULTS)).toBeNull()
    expect(upkeepDue(table({ modifiedSinceAnalyze: 151 }), POSTGRES_DEFAULTS)).toBe('analyze')
    expect(upkeepDue(table({ system: true, modifiedSinceAnalyze: 10_000 }), POSTGRES_DEFAULTS)).toBeNull()
  })

  test('vacuum a table, catalogs included, whose oldest unfrozen row is older than the freeze age, whatever else', () => {
    expect(upkeepDue(table({ xidAge: 200_000_000 }), POSTGRES_DEFAULTS)).toBeNull()
    expect(upkeepDue(table({ xidAge: 200_000_001 }), POSTGRES_DEFAULTS)).toBe('vacuum')
    expect(upkeepDue(table({ system: true, xidAge: 200_000_001 }), POSTGRES_DEFAULTS)).toBe('vacuum')
  })
})

describe("checkpointDue: the checkpointer's rules", () => {
  test('a checkpoint once the log since the last one reaches max_wal_size / (1 + checkpoint_completion_target)', () => {
    expect(checkpointDue({ walBytes: 565_000_000, sinceCheckpointMs: 1_000 }, POSTGRES_DEFAULTS)).toBe(false)
    expect(checkpointDue({ walBytes: 566_000_000, sinceCheckpointMs: 1_000 }, POSTGRES_DEFAULTS)).toBe(true)
  })

  test('a checkpoint every checkpoint_timeout, unless nothing was written since the last', () => {
    expect(checkpointDue({ walBytes: 1_000_000, sinceCheckpointMs: 299_000 }, POSTGRES_DEFAULTS)).toBe(false)
    expect(checkpointDue({ walBytes: 1_000_000, sinceCheckpointMs: 300_000 }, POSTGRES_DEFAULTS)).toBe(true)
    expect(checkpointDue({ walBytes: 120, sinceCheckpointMs: 3_600_000 }, POSTGRES_DEFAULTS)).toBe(false)
  })
})

describe('the embedded database looked after', () => {
  let db: Database
  let projectId: string
  beforeAll(async () => {
    db = embeddedDatabase(await PGlite.create({ loadDataDir: await migratedSnapshot() }))
    projectId = (await createProject(db.orm, { name: 'vacuum', monthlyLimit: null })).projectId
  })
  afterAll(() => db.close())

  const WINDOWS = 200
  /** One commit of heartbeats from every window, as the writer commits them. */
  const beatAll = () => {
    const beats: PresenceChange[] = Array.from({ length: WINDOWS }, (_, i) => ({
      projectId,
      sessionId: `s-${i}`,
      windowId: 'w',
      endUserId: null,
      url: 'https://shop.example/',
      kind: 'beat',
    }))
    return db.transaction((tx) => presenceSink.write(tx, beats))
  }
  const presenceBytes = async () =>
    Number((await db.rows<{ bytes: number }>(sql`select pg_total_relation_size('presence')::float8 as bytes`))[0].bytes)
  // Statistics reach the views at most once a second unless asked to, at the end of a statement.
  const presenceStats = async () => {
    await db.rows(sql`select pg_stat_force_next_flush()`)
    return (await db.rows<{ dead: number; vacuums: number }>(sql`select n_dead_tup::int as dead, vacuum_count::int as vacuums from pg_stat_user_tables where relname = 'presence'`))[0]
  }

  const logSinceCheckpoint = async () =>
    Number((await db.rows<{ bytes: number }>(sql`select (pg_current_wal_insert_lsn() - redo_lsn)::float8 as bytes from pg_control_checkpoint()`))[0].bytes)
  const writeLog = () =>
    db.rows(sql`
      insert into events (project_id, uuid, environment, session_id, event_name, properties, timestamp)
      select ${projectId}::uuid, gen_random_uuid(), 'production', 's-1', 'checkout', '{"total": 42.5}'::jsonb, now() from generate_series(1, 20000)`)

  test('heartbeats rewrite presence rows without end; vacuumed as autovacuum would, the table stays its size', async () => {
    const upkeep = startEmbeddedUpkeep(db, log, { intervalMs: 3_600_000 })
    try {
      // Every beat moves its row's last_seen_at, which is indexed: each leaves a dead row version
      // behind, and an index entry in both indexes.
      await beatAll()
      const sizes: number[] = []
      for (let round = 1; round <= 100; round++) {
        await beatAll()
        if (round % 10 === 0) {
          await upkeep.runOnce()
          sizes.push(await presenceBytes())
        }
      }
      expect(await presenceStats()).toMatchObject({ dead: 0 })
      expect((await presenceStats()).vacuums).toBe(10)
      const kept = sizes.at(-1)!
      // Kept: the table grows to hold what changes between two vacuums, then stays its size.
      expect(sizes.slice(4).every((size) => size === kept)).toBe(true)

      for (let round = 0; round < 100; round++) await beatAll()
      const unkept = await presenceBytes()
      expect((await presenceStats()).dead).toBeGreaterThan(10_000)
      // Not kept, it grows with every beat (measured: 0.27 MB kept, 0.86 MB after the same beats again).
      expect(unkept).toBeGreaterThan(kept * 2)

      const done = await upkeep.runOnce()
      expect(done).toContainEqual({ table: 'presence', upkeep: 'vacuum' })
      expect(await presenceStats()).toMatchObject({ dead: 0 })
      // Space freed is used again: the same beats once more do not grow the table.
      for (let round = 0; round < 10; round++) await beatAll()
      expect(await presenceBytes()).toBe(unkept)
    } finally {
      await upkeep.stop()
    }
  })

  test('rows are frozen, catalogs included, so the database never comes near transaction wraparound', async () => {
    for (let round = 0; round < 20; round++) await beatAll()
    const databaseAge = async () =>
      Number((await db.rows<{ age: number }>(sql`select age(datfrozenxid)::float8 as age from pg_database where datname = current_database()`))[0].age)
    const before = await databaseAge()
    expect(before).toBeGreaterThan(100)

    // A freeze age of 10 transactions stands for autovacuum's 200 million.
    const upkeep = startEmbeddedUpkeep(db, log, { intervalMs: 3_600_000, rules: { freezeMaxAge: 10 } })
    try {
      const done = await upkeep.runOnce()
      expect(done).toContainEqual({ table: 'pg_class', upkeep: 'vacuum' })
      expect(done).toContainEqual({ table: 'presence', upkeep: 'vacuum' })
      expect(await databaseAge()).toBeLessThan(10)
      // Frozen pages are skipped from then on: a second look finds nothing due.
      expect(await upkeep.runOnce()).toEqual([])
    } finally {
      await upkeep.stop()
    }
  })

  test('the log is checkpointed as it grows, so that it is recycled and a start after a crash replays little of it', async () => {
    // PGlite never checkpoints by itself: all the log since it started is kept.
    const before = await logSinceCheckpoint()
    await writeLog()
    const once = await logSinceCheckpoint()
    await writeLog()
    expect((await logSinceCheckpoint()) - before).toBeGreaterThan(1.9 * (once - before))
    expect(once - before).toBeGreaterThan(4 * 1024 * 1024)

    const upkeep = startEmbeddedUpkeep(db, log, { intervalMs: 3_600_000, rules: { checkpointWalBytes: 4 * 1024 * 1024 } })
    try {
      expect(await upkeep.runOnce()).toContainEqual({ checkpoint: true })
      expect(await logSinceCheckpoint()).toBeLessThan(64 * 1024)
      await writeLog()
      expect(await upkeep.runOnce()).toContainEqual({ checkpoint: true })
      expect(await logSinceCheckpoint()).toBeLessThan(64 * 1024)
      // Under the limit, and soon after the last: not yet.
      expect(await upkeep.runOnce()).not.toContainEqual({ checkpoint: true })
    } finally {
      await upkeep.stop()
    }
  })

  test('on its own, it looks for a checkpoint every 10 s and at tables every naptime (a minute)', async () => {
    const upkeep = startEmbeddedUpkeep(db, log, { intervalMs: 20, rules: { naptimeMs: 3_600_000, checkpointWalBytes: 1024 * 1024 } })
    try {
      const { vacuums } = await presenceStats()
      for (let round = 0; round < 3; round++) await beatAll()
      await writeLog()
      for (let waited = 0; (await logSinceCheckpoint()) > 64 * 1024 && waited < 5_000; waited += 20) await Bun.sleep(20)
      expect(await logSinceCheckpoint()).toBeLessThan(64 * 1024)
      expect(await presenceStats()).toMatchObject({ vacuums, dead: 600 })
    } finally {
      await upkeep.stop()
    }
  })

  test('an embedded core looks after its database on its own, and stops when it stops', async () => {
    const services = await startServices(db, log, { upkeep: { intervalMs: 20, rules: { naptimeMs: 20 } } })
    try {
      const vacuums = (await presenceStats()).vacuums
      for (let round = 0; round < 3; round++) await beatAll()
      for (let waited = 0; (await presenceStats()).vacuums === vacuums && waited < 5_000; waited += 20) await Bun.sleep(20)
      expect((await presenceStats()).vacuums).toBeGreaterThan(vacuums)
    } finally {
      await services.stop()
    }
    for (let round = 0; round < 3; round++) await beatAll()
    const stopped = (await presenceStats()).vacuums
    await Bun.sleep(100)
    expect((await presenceStats()).vacuums).toBe(stopped)
  })
})
