import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { admitInOrder, monthOf } from '@sightline/core/ingest/quota/service'
import { setMonthlyLimit } from '@sightline/core/projects/service'
import { countedEvents, startCore, startCoreBeside, type TestCore } from '../../helpers/core'
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

describe('resends count once', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const usage = () => countedEvents(core)
  const at = Date.now() - 60_000
  const uuids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
  /** Per counted route: a request of two items, and a resend of one of them beside a new one. */
  const routes: [string, object, object][] = [
    ['/customEvent/batch', { sessionId: 'rs', events: [{ eventName: 'a', uuid: uuids[0] }, { eventName: 'b', uuid: uuids[1] }] }, { sessionId: 'rs', events: [{ eventName: 'b', uuid: uuids[1] }, { eventName: 'c', uuid: uuids[2] }] }],
    ['/logs', { sessionId: 'rs', logs: [{ level: 'info', message: 'a', timestampMs: at }, { level: 'info', message: 'b', timestampMs: at }] }, { sessionId: 'rs', logs: [{ level: 'info', message: 'a', timestampMs: at }, { level: 'info', message: 'c', timestampMs: at }] }],
    ['/network', { sessionId: 'rs', errors: [{ requestId: 'a', url: 'https://x.test/a', method: 'GET', status: 500, timestampMs: at }, { requestId: 'b', url: 'https://x.test/b', method: 'GET', status: 500, timestampMs: at }] }, { sessionId: 'rs', errors: [{ requestId: 'b', url: 'https://x.test/b', method: 'GET', status: 500, timestampMs: at }, { requestId: 'c', url: 'https://x.test/c', method: 'GET', status: 500, timestampMs: at }] }],
    ['/spans/batch', { sessionId: 'rs', spans: ['a', 'b'].map((id) => ({ traceId: 'f'.repeat(32), spanId: id.repeat(16), name: 'GET /', startTimeMs: at, endTimeMs: at + 1 })) }, { sessionId: 'rs', spans: ['b', 'c'].map((id) => ({ traceId: 'f'.repeat(32), spanId: id.repeat(16), name: 'GET /', startTimeMs: at, endTimeMs: at + 1 })) }],
    ['/errors', { sessionId: 'rs', errors: ['a', 'b'].map((message) => ({ name: 'Error', message, timestampMs: at })) }, { sessionId: 'rs', errors: ['b', 'c'].map((message) => ({ name: 'Error', message, timestampMs: at })) }],
  ]

  test.each(routes)('%s: a resent item is stored and counted once; its new neighbour counts', async (path, first, mixed) => {
    const before = await usage()
    for (let i = 0; i < 2; i++) expect((await core.post(`/api/ingestion${path}`, first)).status).toBe(200)
    expect(await usage()).toBe(before + 2)
    expect((await core.post(`/api/ingestion${path}`, mixed)).status).toBe(200)
    expect(await usage()).toBe(before + 3)
  })

  test('/events: a resent replay chunk is counted once', async () => {
    const before = await usage()
    const chunk = { sessionId: 'rs', windowId: 'w', seq: 0, events: [{ type: 4, timestamp: at, data: { href: 'https://x.test/', width: 800, height: 600 } }] }
    for (let i = 0; i < 3; i++) expect((await core.post('/api/ingestion/events', chunk)).status).toBe(200)
    expect(await usage()).toBe(before + 1)
  })

  test('an item and its resend in one commit count once', async () => {
    const racing = await startCore({ writer: { lingerMs: 20 } })
    try {
      const body = { sessionId: 'rs', events: [{ eventName: 'twice', uuid: crypto.randomUUID() }] }
      const statuses = await Promise.all([0, 1].map(() => racing.post('/api/ingestion/customEvent/batch', body).then((r) => r.status)))
      expect(statuses).toEqual([200, 200])
      expect(await racing.database.db.rows(sql`select sum(events)::int as events from usage_counters`)).toEqual([{ events: 1 }])
    } finally {
      await racing.close()
    }
  })

  test('under a limit, resends do not use it up', async () => {
    const limited = await startCore({ monthlyLimit: 3 })
    try {
      const body = { sessionId: 'rs', events: [{ eventName: 'a', uuid: crypto.randomUUID() }, { eventName: 'b', uuid: crypto.randomUUID() }] }
      for (let i = 0; i < 3; i++) expect((await limited.post('/api/ingestion/customEvent/batch', body)).status).toBe(200)
      const next = await limited.post('/api/ingestion/customEvent', { sessionId: 'rs', eventName: 'c' })
      expect(next.status).toBe(200)
      expect((await next.json()).monthlyLimitReached).toBe(true)
      expect((await limited.post('/api/ingestion/customEvent', { sessionId: 'rs', eventName: 'd' })).status).toBe(429)
    } finally {
      await limited.close()
    }
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

  test('resends in a burst near the limit are answered 200: the room they seemed to take is given to the others', async () => {
    const core = await startCore({ monthlyLimit: 40, writer: { lingerMs: 20 } })
    const stored = async () => (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n
    const used = async () => (await core.database.db.rows<{ n: number }>(sql`select sum(events)::int as n from usage_counters`))[0].n
    try {
      const events = Array.from({ length: 30 }, (_, i) => ({ eventName: `e${i}`, uuid: crypto.randomUUID() }))
      expect((await core.post('/api/ingestion/customEvent/batch', { sessionId: 'near', events })).status).toBe(200)
      // Each resent alone, as after answers lost on the way back: all of them in one commit. The gate
      // admits 10 (the room left) and counts them before the writes find them stored already.
      const statuses = await Promise.all(events.map((event) => core.post('/api/ingestion/customEvent', { sessionId: 'near', ...event }).then((r) => r.status)))
      expect(statuses).toEqual(events.map(() => 200))
      expect([await stored(), await used()]).toEqual([30, 30])
      // The room is still there, and the limit still holds.
      const fresh = await Promise.all(Array.from({ length: 12 }, (_, i) => core.post('/api/ingestion/customEvent', { sessionId: 'near', eventName: `new-${i}` }).then((r) => r.status)))
      expect(fresh.filter((status) => status === 200)).toHaveLength(10)
      expect(fresh.filter((status) => status === 429)).toHaveLength(2)
      expect([await stored(), await used()]).toEqual([40, 40])
    } finally {
      await core.close()
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database hold the limit together', async () => {
    const first = await startCore({ monthlyLimit: 40, writer: { lingerMs: 1 } })
    const second = await startCoreBeside(first)
    try {
      const send = (core: TestCore, i: number) =>
        core.post('/api/ingestion/customEvent', { sessionId: `two-${i % 5}`, eventName: 'shared' }, { key: first.key }).then((r) => r.status)
      const statuses = await Promise.all(Array.from({ length: 120 }, (_, i) => send(i % 2 ? first : second, i)))
      expect(statuses.filter((s) => s === 200)).toHaveLength(40)
      expect((await first.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n).toBe(40)
    } finally {
      await second.close()
      await first.close()
    }
  })
})

describe('internal writes and the monthly limit', () => {
  // Scan findings are the operator's, not the project's traffic (internal/index.ts): the project's
  // limit neither refuses them nor stops counting its own requests that share their commit.
  const SECRET = 'internal-secret-for-quota-tests-0123'
  const findings = (core: TestCore, file: string) =>
    core.request('/api/internal/scan-findings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
      body: JSON.stringify({ projectId: core.project.projectId, findings: [{ ruleId: 'js/xss', severity: 'high', file, message: 'unescaped' }] }),
    })
  const stored = async (core: TestCore) => (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n

  test('findings in a commit after a request that reaches the limit are stored, not refused', async () => {
    const core = await startCore({ monthlyLimit: 1, env: { INTERNAL_SECRET: SECRET }, writer: { lingerMs: 100 } })
    try {
      const event = core.post('/api/ingestion/customEvent', { sessionId: 'internal-a', eventName: 'first' })
      await Bun.sleep(30)
      const scan = findings(core, 'src/a.ts')
      expect([(await event).status, (await scan).status]).toEqual([200, 200])
    } finally {
      await core.close()
    }
  })

  test('findings first in a commit do not lift the limit of the requests after them', async () => {
    const core = await startCore({ monthlyLimit: 1, env: { INTERNAL_SECRET: SECRET }, writer: { lingerMs: 100 } })
    try {
      const scan = findings(core, 'src/b.ts')
      await Bun.sleep(30)
      const events = [1, 2, 3].map((i) => core.post('/api/ingestion/customEvent', { sessionId: 'internal-b', eventName: `e${i}` }))
      expect((await scan).status).toBe(200)
      expect((await Promise.all(events)).map((r) => r.status).sort()).toEqual([200, 429, 429])
      expect(await stored(core)).toBe(1)
    } finally {
      await core.close()
    }
  })
})
