import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { coreWithBreakableDatabase } from '../../helpers/breakable-database'
import { startCore, type TestCore } from '../../helpers/core'

/** One valid request per ingestion route of this area, and what it counts against the monthly quota. */
const ROUTES: { path: string; body: (i: number) => object; items: number }[] = [
  { path: '/api/ingestion/init', body: (i) => ({ sessionId: `d-init-${i}`, endUserId: `d-u${i}` }), items: 0 },
  { path: '/api/ingestion/events', body: (i) => ({ sessionId: `d-rp-${i}`, events: [{ type: 3, timestamp: 1_700_000_000_000 + i, data: { source: 1, i } }] }), items: 1 },
  { path: '/api/ingestion/user', body: (i) => ({ userId: `d-u${i}`, userAttributes: { n: i }, sessionId: `d-id-${i}` }), items: 1 },
  { path: '/api/ingestion/user/auth', body: (i) => ({ userId: `d-a${i}`, userAttributes: { email: `${i}@x.test` }, authFields: ['email'] }), items: 1 },
  { path: '/api/ingestion/customEvent', body: (i) => ({ sessionId: `d-ce-${i}`, eventName: 'e' }), items: 1 },
  { path: '/api/ingestion/customEvent/batch', body: (i) => ({ sessionId: `d-cb-${i}`, events: [{ eventName: 'a' }, { eventName: 'b' }] }), items: 2 },
  { path: '/api/ingestion/groupidentify', body: (i) => ({ endUserId: `d-u${i}`, groupType: 'company', groupKey: `k${i}` }), items: 1 },
  { path: '/api/ingestion/ip-info', body: (i) => ({ sessionId: `d-ip-${i}`, ip: '8.8.8.8' }), items: 0 },
]

const TABLES = ['sessions', 'end_users', 'end_user_aliases', 'replay_chunks', 'events', 'groups', 'group_members']
const countRows = async (core: TestCore) => {
  const counts: Record<string, number> = {}
  for (const table of TABLES) counts[table] = (await core.database.db.rows<{ n: number }>(sql.raw(`select count(*)::int as n from ${table}`)))[0].n
  return counts
}
const usage = async (core: TestCore) => Number((await core.database.db.rows<{ events: string }>(sql`select sum(events)::text as events from usage_counters`))[0]?.events ?? 0)

describe('every route', () => {
  test('answers CORS preflight with 204 and a wrong method with 405', async () => {
    const core = await startCore()
    try {
      for (const { path } of ROUTES) {
        const preflight = await core.request(path, { method: 'OPTIONS', headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST' } })
        expect([path, preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([path, 204, 'https://shop.test'])
        const get = await core.request(path, { method: 'GET' })
        expect([path, get.status]).toEqual([path, 405])
      }
    } finally {
      await core.close()
    }
  })
})

describe('monthly quota on every route', () => {
  test('each route counts what it stores', async () => {
    const core = await startCore()
    try {
      for (const route of ROUTES) {
        const before = await usage(core)
        expect((await core.post(route.path, route.body(1))).status).toBe(200)
        expect([route.path, (await usage(core)) - before]).toEqual([route.path, route.items])
      }
    } finally {
      await core.close()
    }
  })

  test('once over the limit every route answers 429 with monthlyLimitReached and stores nothing', async () => {
    const core = await startCore({ monthlyLimit: 3 })
    try {
      for (let i = 0; i < 3; i++) expect((await core.post('/api/ingestion/customEvent', { sessionId: 'fill', eventName: 'e' })).status).toBe(200)
      const before = await countRows(core)
      for (const route of ROUTES) {
        const res = await core.post(route.path, route.body(2))
        expect([route.path, res.status]).toEqual([route.path, 429])
        expect(await res.json()).toMatchObject({ success: false, error: { code: 'monthly_limit_reached' }, monthlyLimitReached: true })
      }
      expect(await countRows(core)).toEqual(before)
      expect(await usage(core)).toBe(3)
    } finally {
      await core.close()
    }
  })
})

describe('storage trouble', () => {
  test('every route answers 503 storage_unavailable with Retry-After while the database is down', async () => {
    const setup = await coreWithBreakableDatabase()
    try {
      expect((await setup.core.post('/api/ingestion/customEvent', { sessionId: 'warm', eventName: 'e' })).status).toBe(200)
      setup.breakDatabase()
      for (const route of ROUTES) {
        const res = await setup.core.post(route.path, route.body(3))
        expect([route.path, res.status]).toEqual([route.path, 503])
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
        expect((await res.json()).error.code).toBe('storage_unavailable')
      }
    } finally {
      await setup.close()
    }
  })

  test('a full write queue answers 503 overloaded with Retry-After; what was accepted is stored once released', async () => {
    const core = await startCore({ writer: { maxQueuedRows: 12 } })
    try {
      expect((await core.post('/api/ingestion/customEvent', { sessionId: 'hold', eventName: 'first' })).status).toBe(200)
      // Hold the usage counters: every commit waits behind them, so requests queue up.
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      let locked!: () => void
      const isLocked = new Promise<void>((resolve) => (locked = resolve))
      const holder = core.database.db.orm.transaction(async (tx) => {
        await tx.execute(sql`lock table usage_counters in exclusive mode`)
        locked()
        await held
      })
      await isLocked
      const pending = ROUTES.flatMap((route) => [0, 1, 2].map((i) => core.post(route.path, route.body(10 + i)).then(async (r) => ({ path: route.path, status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() }))))
      await Bun.sleep(200)
      release()
      await holder
      const answers = await Promise.all(pending)
      const refused = answers.filter((a) => a.status === 503)
      expect(refused.length).toBeGreaterThan(0)
      for (const answer of refused) {
        expect(answer.body.error.code).toBe('overloaded')
        expect(answer.retryAfter).toMatch(/^\d+$/)
      }
      expect(answers.every((a) => a.status === 200 || a.status === 503)).toBe(true)
      // Every acknowledged custom event is there, and no refused one.
      const acknowledged = answers.filter((a) => a.status === 200 && a.path === '/api/ingestion/customEvent').length
      expect((await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from events where session_id like 'd-ce-%'`))[0].n).toBe(acknowledged)
    } finally {
      await core.close()
    }
  })
})

describe("the write queue's bound counts what a body holds", () => {
  // 200 events of 2 KB each: 400 KB of JSON, a few KB gzipped, over a queue bound of 256 KB.
  const batch = { sessionId: 'bound', events: Array.from({ length: 200 }, (_, i) => ({ eventName: 'big', eventProperties: { i, text: 'x'.repeat(2048) } })) }
  const encoded = new TextEncoder().encode(JSON.stringify(batch))

  const cases: [name: string, init: () => RequestInit][] = [
    ['a gzip body, at its inflated size', () => ({ headers: { 'content-encoding': 'gzip' }, body: Bun.gzipSync(encoded) })],
    ['a body sent without a length (chunked), at its size', () => ({ body: new Blob([encoded]).stream(), duplex: 'half' }) as RequestInit],
  ]
  for (const [name, init] of cases) {
    test(name, async () => {
      const core = await startCore({ writer: { maxQueuedBytes: 256 * 1024 } })
      try {
        const { headers, ...rest } = init()
        const res = await core.request('/api/ingestion/customEvent/batch', {
          method: 'POST',
          headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json', ...(headers as Record<string, string>) },
          ...rest,
        })
        expect(res.status).toBe(503)
        expect((await res.json()).error.code).toBe('overloaded')
        expect(await core.database.db.rows(sql`select 1 from events where session_id = 'bound'`)).toHaveLength(0)
        // The same request, plain and smaller than the bound, is taken.
        expect((await core.post('/api/ingestion/customEvent/batch', { ...batch, events: batch.events.slice(0, 50) })).status).toBe(200)
      } finally {
        await core.close()
      }
    })
  }
})

describe('end to end', () => {
  test('many concurrent requests over a socket, half of them retried: every acknowledged item is stored exactly once', async () => {
    const core = await startCore({ writer: { lingerMs: 1 } })
    try {
      const base = await core.listen()
      const post = (path: string, body: object) =>
        fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body: JSON.stringify(body) }).then((r) => r.status)
      const uuid = (i: number, j = 0) => `0190a4b4-${String(j).padStart(4, '0')}-7000-8000-${String(i).padStart(12, '0')}`
      const requests: [string, object][] = []
      for (let i = 0; i < 150; i++) {
        requests.push(['/api/ingestion/customEvent', { sessionId: `e2e-${i % 10}`, eventName: 'single', uuid: uuid(i) }])
        requests.push(['/api/ingestion/customEvent/batch', { sessionId: `e2e-${i % 10}`, events: [0, 1, 2].map((j) => ({ eventName: 'batched', uuid: uuid(i, j + 1) })) }])
        requests.push(['/api/ingestion/events', { sessionId: `e2e-${i % 10}`, windowId: `w${i % 3}`, seq: i, events: [{ type: 3, timestamp: 1_700_000_000_000 + i, data: { source: 1, i } }] }])
        if (i % 10 === 0) requests.push(['/api/ingestion/user', { userId: `e2e-user-${i}`, userAttributes: { i }, sessionId: `e2e-${i % 10}` }])
        if (i % 10 === 5) requests.push(['/api/ingestion/groupidentify', { endUserId: `e2e-user-${i}`, groupType: 'team', groupKey: `t${Math.floor(i / 10) % 4}` }])
      }
      // Every other request is sent twice at once, as a retry racing its original.
      const sends = requests.flatMap(([path, body], n) => (n % 2 ? [post(path, body), post(path, body)] : [post(path, body)]))
      const statuses = await Promise.all(sends)
      expect(statuses.filter((s) => s !== 200)).toEqual([])

      const count = async (query: ReturnType<typeof sql>) => (await core.database.db.rows<{ n: number }>(query))[0].n
      expect(await count(sql`select count(*)::int as n from events where event_name = 'single'`)).toBe(150)
      expect(await count(sql`select count(*)::int as n from events where event_name = 'batched'`)).toBe(450)
      expect(await count(sql`select count(distinct uuid)::int as n from events`)).toBe(600)
      expect(await count(sql`select count(*)::int as n from replay_chunks`)).toBe(150)
      expect(await count(sql`select count(distinct seq)::int as n from replay_chunks`)).toBe(150)
      expect(await count(sql`select count(*)::int as n from sessions`)).toBe(10)
      expect(await count(sql`select count(*)::int as n from groups`)).toBe(4)
      expect(await count(sql`select count(*)::int as n from group_members`)).toBe(15)
      expect(await count(sql`select count(*)::int as n from end_users where attributes ? 'i'`)).toBe(15)
    } finally {
      await core.close()
    }
  })
})
