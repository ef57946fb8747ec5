import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { admitInOrder, monthOf } from '@sightline/core/ingest/quota/service'
import { postgresDatabase } from '@sightline/core/db'
import { setMonthlyLimit } from '@sightline/core/projects/service'
import { startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

describe('quota rules', () => {
  test('months are calendar months in UTC', () => {
    expect(monthOf(Date.UTC(2026, 10, 30, 23, 59, 59))).toBe('2026-11-01')
    expect(monthOf(Date.UTC(2026, 11, 1, 0, 0, 0))).toBe('2026-12-01')
  })

  test('requests are admitted in order while usage is under the limit', () => {
    expect(admitInOrder(0, null, [5, 5])).toEqual([true, true])
    expect(admitInOrder(8, 10, [1, 1, 1])).toEqual([true, true, false])
    expect(admitInOrder(9, 10, [20, 1])).toEqual([true, false])
    expect(admitInOrder(10, 10, [0])).toEqual([false])
  })
})

describe('monthly limit', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore({ monthlyLimit: 5 })
  })
  afterAll(() => core.close())

  const count = async () => (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n
  const usage = async () => (await core.database.db.rows<{ events: string }>(sql`select sum(events)::text as events from usage_counters`))[0]?.events

  test('429 with monthlyLimitReached once over, and nothing stored', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await core.post('/api/ingestion/customEvent', { sessionId: 'q', eventName: `e${i}` })
      expect(res.status).toBe(200)
      expect((await res.json()).monthlyLimitReached).toBe(i === 5 ? true : undefined)
    }
    for (const path of ['/api/ingestion/customEvent', '/api/ingestion/customEvent/batch']) {
      const res = await core.post(path, { sessionId: 'q', eventName: 'over', events: [{ eventName: 'over' }] })
      expect(res.status).toBe(429)
      expect(await res.json()).toEqual({
        success: false,
        error: { code: 'monthly_limit_reached', message: expect.any(String) },
        monthlyLimitReached: true,
      })
    }
    expect(await count()).toBe(5)
    expect(await usage()).toBe('5')
  })

  test('raising the limit lets data in again at once', async () => {
    await setMonthlyLimit(core.database.db, core.project.projectId, 7)
    await Bun.sleep(20)
    expect((await core.post('/api/ingestion/customEvent', { sessionId: 'q', eventName: 'after-raise' })).status).toBe(200)
    await setMonthlyLimit(core.database.db, core.project.projectId, null)
    await Bun.sleep(20)
    expect((await core.post('/api/ingestion/customEvent/batch', { sessionId: 'q', events: [{ eventName: 'a' }, { eventName: 'b' }] })).status).toBe(200)
    expect(await usage()).toBe('8')
  })
})

describe('monthly limit under concurrency', () => {
  test('200 concurrent requests against a limit of 50 store exactly 50', async () => {
    const core = await startCore({ monthlyLimit: 50, writer: { lingerMs: 2 } })
    try {
      const statuses = await Promise.all(
        Array.from({ length: 200 }, (_, i) => core.post('/api/ingestion/customEvent', { sessionId: `c${i % 7}`, eventName: 'burst' }).then((r) => r.status)),
      )
      expect(statuses.filter((s) => s === 200)).toHaveLength(50)
      expect(statuses.filter((s) => s === 429)).toHaveLength(150)
      expect((await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n).toBe(50)
    } finally {
      await core.close()
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database hold the limit together', async () => {
    const first = await startCore({ monthlyLimit: 40, writer: { lingerMs: 1 } })
    const secondDb = postgresDatabase(first.database.url!)
    const second = await startCore({ database: { db: secondDb, close: () => secondDb.close() } })
    try {
      const send = (core: TestCore, i: number) =>
        core.post('/api/ingestion/customEvent', { sessionId: `two-${i % 5}`, eventName: 'shared' }, { key: first.key }).then((r) => r.status)
      const statuses = await Promise.all(Array.from({ length: 120 }, (_, i) => send(i % 2 ? first : second, i)))
      expect(statuses.filter((s) => s === 200)).toHaveLength(40)
      expect((await first.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n).toBe(40)
    } finally {
      await second.close()
      await secondDb.close()
      await first.close()
    }
  })
})
