import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { createLogger } from '@sightline/core/log'
import type { Sink } from '@sightline/core/sink'
import { createWriter, type WriteRequest } from '@sightline/core/writer'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'

// The writer when a commit fails for the database's reasons while other requests wait their turn.
let database: TestDatabase
const log = createLogger('silent')

beforeAll(async () => {
  database = await createTestDatabase()
  await database.db.rows(sql`create table outage_probe (id text primary key)`)
})
afterAll(() => database.close())
beforeEach(() => database.db.rows(sql`truncate outage_probe`))

/** Inserts its rows; `hold`, if given, is awaited after the first call's inserts: a commit stuck midway. */
function probeSink(hold?: () => Promise<void>): Sink<{ id: string }> {
  let calls = 0
  return {
    name: 'outage_probe',
    async write(tx, rows) {
      for (const row of rows) await tx.execute(sql`insert into outage_probe (id) values (${row.id}) on conflict do nothing`)
      if (calls++ === 0) await hold?.()
    },
  }
}

const request = (sink: Sink<{ id: string }>, id: string): WriteRequest => ({
  projectId: '00000000-0000-0000-0000-000000000000',
  monthlyLimit: null,
  items: 1,
  bytes: 100,
  writes: [{ sink, rows: [{ id }] }],
})

/** Each write's outcome and how long after `start` it came. */
const timed = (start: number, write: Promise<void>) =>
  write.then(
    () => ({ code: 'ok', ms: performance.now() - start }),
    (error: { code?: string }) => ({ code: error.code, ms: performance.now() - start }),
  )

const stored = async () => (await database.db.rows<{ id: string }>(sql`select id from outage_probe order by id`)).map((r) => r.id)

describe('a commit that fails while others wait in the queue', () => {
  test('the requests queued behind it are answered 503 with it, not each after a commit timeout of its own', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const sink = probeSink(() => held)
    const w = createWriter(database.db, log, { concurrency: 1, commitTimeoutMs: 500, now: () => 1_000_000 })
    const start = performance.now()
    // Let go whatever happens: on the embedded database a stuck transaction holds every later statement.
    const timer = setTimeout(release, 1_500)
    const first = timed(start, w.write(request(sink, 'stuck')))
    await Bun.sleep(20) // the first commit is under way and stuck; these wait for the next
    const queued = ['q1', 'q2', 'q3'].map((id) => timed(start, w.write(request(sink, id))))
    const results = await Promise.all([first, ...queued])
    expect(results.map((r) => r.code)).toEqual(Array(4).fill('storage_unavailable'))
    // Answered as the stuck commit is given up (500 ms), not a commit timeout later (1 s).
    for (const { ms } of results) expect(ms).toBeLessThan(850)
    expect(w.stats()).toEqual({ queued: 0, inflight: 0 })
    release()
    clearTimeout(timer)
    await Bun.sleep(100)
    // The stuck commit may land once let go (a retry of it is a no-op); what was answered 503 while queued never does.
    expect((await stored()).filter((id) => id !== 'stuck')).toEqual([])
  })

  test.if(engine === 'postgres')('a lock held for long by another session: every request answered 503 within about one commit timeout, and stored again once it is let go', async () => {
    const other = postgres(database.url!, { max: 1, onnotice: () => {} })
    const session = await other.reserve()
    try {
      await session`begin`
      await session`lock table outage_probe in access exclusive mode`
      const sink = probeSink()
      const w = createWriter(database.db, log, { commitTimeoutMs: 500, failFastMs: 100 })
      const start = performance.now()
      const writes: Promise<{ code?: string; ms: number }>[] = []
      // A steady stream, as clients send: for 1.5 s, one every 20 ms. Each commit waits on the lock
      // until given up; those queued meanwhile must not wait for a commit of their own after it.
      for (let i = 0; i < 75; i++) {
        const sent = performance.now()
        writes.push(timed(sent, w.write(request(sink, `l${i}`))))
        await Bun.sleep(20)
      }
      const results = await Promise.all(writes)
      expect(new Set(results.map((r) => r.code))).toEqual(new Set(['storage_unavailable']))
      expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(850)
      expect(performance.now() - start).toBeLessThan(3_000)
      await session`rollback`
      await Bun.sleep(600) // the last commit given up, and its fail-fast window, are over
      await w.write(request(sink, 'after'))
      expect(await stored()).toContain('after')
    } finally {
      await session`rollback`.catch(() => {})
      session.release()
      await other.end()
    }
  })
})
