import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { coreWithBreakableDatabase, holdCommits } from '../helpers/breakable-database'
import { memoryLogger, startCore, type TestCore } from '../helpers/core'
import { engine } from '../helpers/database'

describe('health probes', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  test('GET / and /health/simple', async () => {
    expect(await (await core.request('/')).json()).toEqual({ status: 'ok', service: 'sightline' })
    expect(await (await core.request('/health/simple')).json()).toEqual({ status: 'ok' })
  })

  test('GET /health reports the database and the writer', async () => {
    const res = await core.request('/health')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      status: 'ok',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      uptimeSeconds: expect.any(Number),
      checks: { database: { ok: true, latencyMs: expect.any(Number), writable: true }, writer: { queued: 0, inflight: 0 } },
    })
  })
})

describe('when the database stops', () => {
  test('health turns degraded (503), /health/simple stays up, and ingestion answers 503 with Retry-After', async () => {
    const setup = await coreWithBreakableDatabase()
    const { core } = setup
    try {
      expect((await core.post('/api/ingestion/customEvent', { sessionId: 'outage', eventName: 'before' })).status).toBe(200)
      setup.breakDatabase()

      const health = await core.request('/health')
      expect(health.status).toBe(503)
      expect(await health.json()).toMatchObject({ status: 'degraded', checks: { database: { ok: false, latencyMs: null, writable: null } } })
      expect((await core.request('/health/simple')).status).toBe(200)

      const refused = await core.post('/api/ingestion/customEvent', { sessionId: 'outage', eventName: 'during' })
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
      expect((await refused.json()).error.code).toBe('storage_unavailable')

      if (engine === 'postgres') {
        setup.repair()
        await Bun.sleep(300)
        let status = 0
        for (let i = 0; i < 20 && status !== 200; i++, await Bun.sleep(100)) {
          status = (await core.post('/api/ingestion/customEvent', { sessionId: 'outage', eventName: 'after' })).status
        }
        expect(status).toBe(200)
        expect((await core.request('/health')).status).toBe(200)
      }
    } finally {
      await setup.close()
    }
  })
})

// What a load balancer must see when core's database answers but cannot store: a failover that left
// DATABASE_URL on a standby, or a database the operator set read-only.
describe.skipIf(engine !== 'postgres')('when the database refuses writes', () => {
  test('health turns degraded (503) while the database is read-only, and ok again once it is not', async () => {
    const core = await startCore()
    const admin = postgres(core.database.url!, { max: 1, onnotice: () => {} })
    const name = new URL(core.database.url!).pathname.slice(1)
    // Database settings reach a session as it starts: core's sessions are ended so that new ones begin.
    const restartSessions = () => admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    // The first probe after may meet a session just ended (no answer): asked again until it is answered.
    const answeredHealth = async () => {
      for (let i = 0; ; i++, await Bun.sleep(100)) {
        const res = await core.request('/health')
        const body = await res.json()
        if (body.checks.database.writable !== null || i === 20) return { status: res.status, body }
      }
    }
    try {
      await admin.unsafe(`alter database ${name} set default_transaction_read_only = on`)
      await restartSessions()
      const readOnly = await answeredHealth()
      expect(readOnly.status).toBe(503)
      expect(readOnly.body).toMatchObject({ status: 'degraded', checks: { database: { ok: false, latencyMs: expect.any(Number), writable: false } } })
      expect((await core.post('/api/ingestion/customEvent', { sessionId: 'read-only', eventName: 'refused' })).status).toBe(503)

      await admin.unsafe(`alter database ${name} reset default_transaction_read_only`)
      await restartSessions()
      const writable = await answeredHealth()
      expect(writable.status).toBe(200)
      expect(writable.body).toMatchObject({ status: 'ok', checks: { database: { ok: true, writable: true } } })
    } finally {
      await admin.unsafe(`alter database ${name} reset default_transaction_read_only`)
      await admin.end()
      await core.close()
    }
  })
})

describe('when the database stops answering', () => {
  test('a request that must read first (a key not cached, the internal route) is answered 503 with Retry-After, not left waiting', async () => {
    const secret = 'internal-secret-of-the-tests'
    const setup = await coreWithBreakableDatabase({ env: { INTERNAL_SECRET: secret } })
    const { core } = setup
    try {
      // Connections are open and idle, as on any core that served: what is read next is sent on one.
      expect((await core.post('/api/ingestion/customEvent', { sessionId: 'frozen', eventName: 'before' })).status).toBe(200)
      setup.freezeDatabase()
      const started = performance.now()
      const answers = await Promise.all([
        core.post('/api/ingestion/customEvent', { sessionId: 'frozen', eventName: 'during' }, { key: `sl_live_${'A'.repeat(32)}` }),
        core.post('/api/internal/scan-findings', { projectId: core.project.projectId, findings: [] }, { key: null, headers: { 'x-internal-secret': secret } }),
      ])
      expect(performance.now() - started).toBeLessThan(15_000)
      for (const res of answers) {
        expect(res.status).toBe(503)
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
        expect((await res.json()).error.code).toBe('storage_unavailable')
      }
    } finally {
      await setup.close()
    }
  }, 30_000)
})

describe.skipIf(engine !== 'postgres')('when the writer queue is full', () => {
  test('/health stays 200 while the database answers and shows the rows queued and in flight; ingestion answers 503 overloaded', async () => {
    const core = await startCore({ writer: { maxQueuedRows: 30 } })
    const admin = postgres(core.database.url!, { max: 1, onnotice: () => {} })
    const send = (n: number) => Array.from({ length: n }, () => core.post('/api/ingestion/customEvent', { sessionId: 'full', endUserId: 'full-user', eventName: 'queued' }))
    try {
      expect((await send(1)[0]).status).toBe(200) // the key is cached: auth needs no database from here on
      const commits = await holdCommits(admin)
      // Each request is three rows (the event, its session and its end user): a commit under way, another,
      // then a full queue.
      const accepted: Promise<Response>[] = []
      for (let i = 0; i < 3; i++) {
        accepted.push(...send(10))
        await Bun.sleep(50)
      }
      const refused = await send(1)[0]
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      expect((await refused.json()).error.code).toBe('overloaded')

      const health = await core.request('/health')
      expect(health.status).toBe(200)
      expect(await health.json()).toMatchObject({ status: 'ok', checks: { database: { ok: true }, writer: { queued: 30, inflight: 60 } } })
      await commits.release()
      expect((await Promise.all(accepted)).map((res) => res.status)).toEqual(accepted.map(() => 200))
      expect((await (await core.request('/health')).json()).checks.writer).toEqual({ queued: 0, inflight: 0 })
    } finally {
      await admin.end()
      await core.close()
    }
  })
})

describe('request log', () => {
  test('one line per request, with no key, query or body in it', async () => {
    const { log, lines } = memoryLogger('info')
    const core = await startCore({ log })
    try {
      await core.request(`/api/ingestion/customEvent?apiKey=${core.key}`, {
        method: 'POST',
        body: JSON.stringify({ sessionId: 'log-session', eventName: 'secret-event-name', apiKey: core.key }),
      })
      await core.post('/api/ingestion/customEvent', { sessionId: 'log-session', eventName: 'x' })
      await Bun.sleep(10)
      await core.request('/api/ingestion/customEvent', { method: 'OPTIONS', headers: { origin: 'https://shop.example' } })
      await Bun.sleep(10)
      const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request')
      expect(requests).toHaveLength(3)
      expect(requests[2]).toMatchObject({ method: 'OPTIONS', path: '/api/ingestion/customEvent', status: 204 })
      expect(requests[0]).toMatchObject({ level: 'info', method: 'POST', path: '/api/ingestion/customEvent', status: 200, project: core.project.projectId })
      expect(requests[0].ms).toBeGreaterThanOrEqual(0)
      const all = lines.join('\n')
      expect(all).not.toContain(core.key)
      expect(all).not.toContain(core.key.slice(0, 16))
      expect(all).not.toContain('secret-event-name')
      expect(all).not.toContain('apiKey')
    } finally {
      await core.close()
    }
  })
})
