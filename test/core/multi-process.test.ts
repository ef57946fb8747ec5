import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createQuota } from '@sightline/core/ingest/quota'
import { monthOf } from '@sightline/core/ingest/quota/service'
import { createProject } from '@sightline/core/projects/service'
import type { WriteRequest } from '@sightline/core/writer'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { spawnCore, type CoreProcess } from '../helpers/process'

// Operators scale core out by running several processes on one Postgres behind a load balancer. Here
// two real core processes share one database and the same requests race through both: what the
// tables hold afterwards must be what one process would have stored. Postgres only (an embedded
// database belongs to one process).

let database: TestDatabase
let cores: CoreProcess[] = []
let key = ''
let limitedKey = ''
const LIMIT = 40

beforeAll(async () => {
  if (engine !== 'postgres') return
  database = await createTestDatabase()
  key = (await createProject(database.db.orm, { name: 'shared' })).keys.production
  limitedKey = (await createProject(database.db.orm, { name: 'limited', monthlyLimit: LIMIT })).keys.production
  cores = await Promise.all([spawnCore({ DATABASE_URL: database.url! }), spawnCore({ DATABASE_URL: database.url! })])
})
afterAll(async () => {
  await Promise.all(cores.map((core) => core.stop()))
  await database?.close()
})

const post = async (core: CoreProcess, path: string, body: object, useKey = key) => {
  const res = await fetch(`${core.url}/api/ingestion${path}`, { method: 'POST', headers: { authorization: `Bearer ${useKey}` }, body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}
/** Sends each body through both processes at once: the first to one, the second to the other, and so on. */
const spread = (path: string, bodies: object[], useKey = key) => Promise.all(bodies.map((body, i) => post(cores[i % 2], path, body, useKey)))
const rows = <T = Record<string, unknown>>(query: ReturnType<typeof sql>) => database.db.rows<T>(query)
const uuid = (run: number, n: number) => `0190a4b4-0000-7000-8000-${String(run * 1000 + n).padStart(12, '0')}`

describe.skipIf(engine !== 'postgres')('the monthly limit, held by two processes together', () => {
  test('single items, batches that straddle the limit and resends near it: stored while under, counted once, then 429 and nothing stored', async () => {
    // 30 single events; then 8 of them resent through the other process (a retry the load balancer
    // sent elsewhere) at once with 2 new ones: stored once, counted once.
    const singles = Array.from({ length: 32 }, (_, i) => ({ sessionId: `q-${i % 3}`, eventName: 'single', uuid: uuid(1, i) }))
    const first = await spread('/customEvent', singles.slice(0, 30), limitedKey)
    expect(first.map((a) => a.status)).toEqual(first.map(() => 200))
    const resent = await spread('/customEvent', [...singles.slice(30), ...singles.slice(1, 9)], limitedKey)
    expect(resent.map((a) => a.status)).toEqual(resent.map(() => 200))
    expect(await usage()).toBe(32)

    // Batches of 4 new events at once through both: each is admitted while the usage before it is
    // under the limit, so the limit is passed by less than one batch.
    const batches = Array.from({ length: 12 }, (_, b) => ({ sessionId: 'q-b', events: [0, 1, 2, 3].map((j) => ({ eventName: 'batched', uuid: uuid(2, b * 4 + j) })) }))
    const batchAnswers = await spread('/customEvent/batch', batches, limitedKey)
    const admitted = batches.filter((_, b) => batchAnswers[b].status === 200)
    for (const answer of batchAnswers.filter((a) => a.status !== 200)) {
      expect(answer).toEqual({ status: 429, body: { success: false, error: { code: 'monthly_limit_reached', message: expect.any(String) }, monthlyLimitReached: true } })
    }
    const stored = await storedUuids()
    expect(stored.size).toBeGreaterThanOrEqual(LIMIT)
    expect(stored.size).toBeLessThanOrEqual(LIMIT + 3)
    expect(stored.size).toBe(32 + admitted.length * 4)
    expect(admitted.flatMap((b) => b.events.map((e) => e.uuid)).filter((id) => !stored.has(id))).toEqual([])
    expect(await usage()).toBe(stored.size)
    expect(await rows(sql`select uuid from events group by uuid having count(*) > 1`)).toEqual([])

    // Over the limit: every process refuses new items and resends alike, and stores nothing.
    const over = await spread('/customEvent', [singles[0], { sessionId: 'q-over', eventName: 'over' }, singles[1], { sessionId: 'q-over', eventName: 'over' }], limitedKey)
    expect(over.map((a) => a.status)).toEqual([429, 429, 429, 429])
    expect((await storedUuids()).size).toBe(stored.size)
  })

  async function usage() {
    return Number((await rows<{ n: string }>(sql`select coalesce(sum(u.events), 0)::text as n from usage_counters u join projects p using (project_id) where p.name = 'limited'`))[0].n)
  }
  async function storedUuids() {
    const found = await rows<{ id: string }>(sql`select e.uuid::text as id from events e join projects p using (project_id) where p.name = 'limited'`)
    return new Set(found.map((r) => r.id))
  }
})

describe.skipIf(engine !== 'postgres')('the monthly limit, step by step', () => {
  // Two commits of a limited project in two processes: the second waits on the counter the first
  // holds. Once the first commits, the second must count what the first added, wherever it added it
  // (a counter row the second could not see when it began to wait is one it would not lock or read).
  test('a commit that waited on the counter sees what the one before it counted', async () => {
    for (let round = 0; round < 3; round++) {
      const project = await createProject(database.db.orm, { name: `steps-${round}`, monthlyLimit: 1 })
      const month = monthOf(Date.now())
      // Not the month's first commit: its counter row exists already.
      await rows(sql`insert into usage_counters (project_id, month, shard, events) values (${project.projectId}, ${month}, 0, 0)`)
      const request: WriteRequest = { projectId: project.projectId, monthlyLimit: 1, items: 1, bytes: 0, writes: [] }
      const [one, other] = [createQuota(), createQuota()]

      let commitFirst!: () => void
      const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve))
      let firstReady!: () => void
      const firstCounted = new Promise<void>((resolve) => (firstReady = resolve))
      const first = database.db.transaction(async (tx) => {
        const decision = await one.gate.admit(tx, [request])
        await decision.record?.(tx)
        firstReady()
        await firstMayCommit
        return decision.verdicts
      })
      await firstCounted
      const second = database.db.transaction(async (tx) => {
        const decision = await other.gate.admit(tx, [request])
        await decision.record?.(tx)
        return decision.verdicts
      })
      await waitUntilBlocked()
      commitFirst()
      expect((await first)[0]).toBeNull()
      expect((await second)[0]?.code).toBe('monthly_limit_reached')
      expect(await rows(sql`select sum(events)::int as n from usage_counters where project_id = ${project.projectId}`)).toEqual([{ n: 1 }])
    }
  })

  async function waitUntilBlocked() {
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline) {
      const waiting = await rows(sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
      if (waiting.length > 0) return
      await Bun.sleep(10)
    }
    throw new Error('the second commit never waited on the first')
  }
})
