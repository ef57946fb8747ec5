import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { extractKey } from '@sightline/core/http/auth'
import { createKey, revokeKey, rotateKey } from '@sightline/core/projects/service'
import { coreWithBreakableDatabase } from '../../helpers/breakable-database'
import { startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'
import { spawnCore } from '../../helpers/process'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const event = (extra: Record<string, unknown> = {}) => ({ sessionId: 'auth-session', eventName: 'auth-check', ...extra })

describe('where the key comes from', () => {
  test('precedence: Bearer header, then body apiKey, then query apiKey', () => {
    expect(extractKey('Bearer h', { apiKey: 'b' }, 'q')).toBe('h')
    expect(extractKey('bearer  h ', undefined, undefined)).toBe('h')
    expect(extractKey(undefined, { apiKey: 'b' }, 'q')).toBe('b')
    expect(extractKey('Basic xyz', { apiKey: 42 }, 'q')).toBe('q')
    expect(extractKey(undefined, 'not an object', undefined)).toBeUndefined()
  })

  test('a Bearer header authenticates', async () => {
    expect((await core.post('/api/ingestion/customEvent', event())).status).toBe(200)
  })

  test('a body apiKey authenticates (beacons: text/plain, no headers)', async () => {
    const res = await core.request('/api/ingestion/customEvent', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify(event({ apiKey: core.key })),
    })
    expect(res.status).toBe(200)
  })

  test('a query apiKey authenticates', async () => {
    const res = await core.request(`/api/ingestion/customEvent?apiKey=${core.key}`, { method: 'POST', body: JSON.stringify(event()) })
    expect(res.status).toBe(200)
  })

  test('a key in the body or query is taken without the spaces around it, as HTTP takes the header\'s', async () => {
    // A key configured with a trailing newline or space works in the header (HTTP strips it there), so
    // beacons, heartbeats and session-ends, which carry the same key in the body, must work too.
    expect(extractKey(undefined, { apiKey: ' b\n' }, 'q')).toBe('b')
    expect(extractKey(undefined, { apiKey: '  ' }, ' q ')).toBe('q')
    expect(extractKey(undefined, undefined, ' ')).toBeUndefined()
    const beacon = await core.request('/api/ingestion/customEvent', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify(event({ apiKey: `${core.key}\n` })),
    })
    expect(beacon.status).toBe(200)
    const replay = await core.request('/api/ingestion/events', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify({ sessionId: 'auth-session', events: [{ type: 3, timestamp: Date.now(), data: {} }], apiKey: ` ${core.key}\r\n` }),
    })
    expect(replay.status).toBe(200)
    const queried = await core.request(`/api/ingestion/customEvent?apiKey=%20${core.key}%20`, { method: 'POST', body: JSON.stringify(event()) })
    expect(queried.status).toBe(200)
  })

  test('the header wins over a wrong body key', async () => {
    const res = await core.post('/api/ingestion/customEvent', event({ apiKey: 'sl_dev_wrongwrongwrongwrongwrongwrongwr' }))
    expect(res.status).toBe(200)
  })
})

describe('refusals', () => {
  test('no key: 401 missing_api_key', async () => {
    const res = await core.post('/api/ingestion/customEvent', event(), { key: null })
    expect(res.status).toBe(401)
    expect((await res.json()).error.code).toBe('missing_api_key')
  })

  test('unknown and malformed keys: 401 invalid_api_key', async () => {
    for (const key of ['sl_dev_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'nonsense', `${core.key}x`]) {
      const res = await core.post('/api/ingestion/customEvent', event(), { key })
      expect(res.status).toBe(401)
      expect((await res.json()).error.code).toBe('invalid_api_key')
    }
  })

  test('auth comes before body validation', async () => {
    const res = await core.post('/api/ingestion/customEvent', { nonsense: true }, { key: null })
    expect(res.status).toBe(401)
  })

  test('keys are stored only as hashes', async () => {
    const rows = await core.database.db.rows<{ key_hash: string; key_prefix: string }>(sql`select key_hash, key_prefix from api_keys`)
    expect(rows.length).toBeGreaterThanOrEqual(2)
    const dump = JSON.stringify(rows)
    for (const key of Object.values(core.project.keys)) {
      expect(dump).not.toContain(key)
      expect(dump).toContain(key.slice(0, 16))
    }
  })
})

describe('rotation and revocation', () => {
  test('rotation takes effect at once in this process', async () => {
    const created = await createKey(core.database.db, core.project.projectId, 'staging')
    expect((await core.post('/api/ingestion/customEvent', event(), { key: created.key })).status).toBe(200)
    const rotated = await rotateKey(core.database.db, core.project.projectId, 'staging')
    expect(rotated.revoked).toEqual([created.keyPrefix])
    await Bun.sleep(20)
    expect((await core.post('/api/ingestion/customEvent', event(), { key: created.key })).status).toBe(401)
    expect((await core.post('/api/ingestion/customEvent', event(), { key: rotated.key })).status).toBe(200)
  })

  test('revocation by prefix takes effect at once', async () => {
    const created = await createKey(core.database.db, core.project.projectId, 'preview')
    expect((await core.post('/api/ingestion/customEvent', event(), { key: created.key })).status).toBe(200)
    await revokeKey(core.database.db, core.project.projectId, created.keyPrefix)
    await Bun.sleep(20)
    expect((await core.post('/api/ingestion/customEvent', event(), { key: created.key })).status).toBe(401)
  })

  test.skipIf(engine !== 'postgres')('a rotation is seen by another core process within 100 ms', async () => {
    const other = await spawnCore({ DATABASE_URL: core.database.url! })
    try {
      const created = await createKey(core.database.db, core.project.projectId, 'edge')
      const send = () =>
        fetch(`${other.url}/api/ingestion/customEvent`, {
          method: 'POST',
          headers: { authorization: `Bearer ${created.key}` },
          body: JSON.stringify(event()),
        })
      expect((await send()).status).toBe(200) // now cached in the other process
      const rotatedAt = performance.now()
      await rotateKey(core.database.db, core.project.projectId, 'edge')
      let status = 200
      while (status === 200 && performance.now() - rotatedAt < 1000) status = (await send()).status
      const seenAfterMs = performance.now() - rotatedAt
      expect(status).toBe(401)
      console.info(`rotation seen by the other process after ${seenAfterMs.toFixed(1)} ms`)
      expect(seenAfterMs).toBeLessThan(100)
    } finally {
      await other.stop()
    }
  })
})

describe('a key that must be looked up while the database is out of reach', () => {
  test('503 storage_unavailable with Retry-After, not an internal error; the key works once it is back', async () => {
    const setup = await coreWithBreakableDatabase()
    const { core } = setup
    try {
      // What a reconnection does: the cache is emptied, as notifications may have been missed.
      core.services.keys.clear()
      setup.breakDatabase()
      const res = await core.post('/api/ingestion/customEvent', { sessionId: 'lookup', eventName: 'e' })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
      expect((await res.json()).error.code).toBe('storage_unavailable')
      if (engine === 'postgres') {
        setup.repair()
        let status = 0
        for (let i = 0; i < 50 && status !== 200; i++) {
          status = (await core.post('/api/ingestion/customEvent', { sessionId: 'lookup', eventName: 'e' })).status
          if (status !== 200) await Bun.sleep(100)
        }
        expect(status).toBe(200)
      }
    } finally {
      await setup.close()
    }
  })
})
