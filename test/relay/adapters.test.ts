import { afterAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore } from '../helpers/core'
import { elysiaRelay } from '@sightline/relay/adapters/elysia'
import { Elysia } from 'elysia'
import { ENDPOINTS, serves } from './endpoints'
import { rawRequest, startRelay, startTap, type AdapterName } from './helpers'

// One real core on a real database for the file; every adapter relays to it over TCP.
const core = await startCore({ env: { MAX_BODY_BYTES: String(4 * 1024 * 1024) } })
const coreUrl = await core.listen()
const tap = startTap(coreUrl, { 'set-cookie': 'tracking=1; Path=/' })
afterAll(async () => {
  tap.close()
  await core.close()
})

const ADAPTERS: AdapterName[] = ['bun', 'node', 'node-middleware', 'elysia', 'deno', 'standalone']
const PREFIX = '/_sl'

/** A JSON body of about `bytes`, sent as a stream of 64 KB pieces with no declared length. */
function streamedBatch(sessionId: string, bytes: number): { stream: ReadableStream<Uint8Array>; events: number } {
  const padding = 'x'.repeat(1000)
  const events = Math.ceil(bytes / 1050)
  const text = JSON.stringify({ sessionId, endUserId: `${sessionId}-u`, events: Array.from({ length: events }, (_, i) => ({ eventName: `e${i}`, eventProperties: { padding } })) })
  const encoded = new TextEncoder().encode(text)
  let offset = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= encoded.length) return controller.close()
      controller.enqueue(encoded.slice(offset, offset + 64 * 1024))
      offset += 64 * 1024
    },
  })
  return { stream, events }
}

for (const adapter of ADAPTERS) {
  describe(`${adapter} adapter`, () => {
    let relay: Awaited<ReturnType<typeof startRelay>>
    let tapped: Awaited<ReturnType<typeof startRelay>>
    const send = (path: string, init: RequestInit = {}, base = () => relay.url) => fetch(`${base()}${PREFIX}${path}`, init)

    test('starts', async () => {
      relay = await startRelay(adapter, { upstream: coreUrl, prefix: PREFIX })
      tapped = await startRelay(adapter, { upstream: tap.url, prefix: PREFIX })
    })
    afterAll(async () => {
      await relay?.close()
      await tapped?.close()
    })

    for (const endpoint of ENDPOINTS) {
      test.skipIf(!serves(core, endpoint))(`${endpoint.method} ${endpoint.path} reaches core and is stored`, async () => {
        const id = `${adapter}-${endpoint.path.replace(/\W+/g, '-')}`
        const res = await send(endpoint.path, {
          method: endpoint.method,
          headers: endpoint.body ? { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' } : {},
          body: endpoint.body ? JSON.stringify(endpoint.body(id)) : undefined,
        })
        const answer = await res.json()
        expect({ status: res.status, answer }).toMatchObject({ status: 200 })
        if (endpoint.stored) {
          expect(answer.success).toBe(true)
          expect(await endpoint.stored(core, id)).toBeGreaterThan(0)
        } else {
          expect(answer.status).toBe('ok')
        }
      })
    }

    test('the key moves into the body, cookies stay behind, the client address is appended to X-Forwarded-For', async () => {
      const before = tap.seen.length
      const res = await send(
        '/api/ingestion/customEvent',
        {
          method: 'POST',
          headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json', cookie: 'session=secret', 'x-forwarded-for': '203.0.113.9', 'user-agent': 'relay-test/1' },
          body: JSON.stringify({ sessionId: `${adapter}-tap`, eventName: 'tapped' }),
        },
        () => tapped.url,
      )
      expect(res.status).toBe(200)
      expect(res.headers.get('set-cookie')).toBeNull()
      const [seen] = tap.seen.slice(before)
      expect(seen.headers.authorization).toBeUndefined()
      expect(seen.headers.cookie).toBeUndefined()
      expect(seen.headers['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1')
      expect(seen.headers['x-forwarded-proto']).toBe('http')
      expect(seen.headers['x-forwarded-host']).toBe(new URL(tapped.url).host)
      expect(seen.headers['user-agent']).toBe('relay-test/1')
      expect(JSON.parse(new TextDecoder().decode(seen.body))).toEqual({ apiKey: core.key, sessionId: `${adapter}-tap`, eventName: 'tapped' })
      expect(await core.database.db.rows(sql`select 1 from events where session_id = ${`${adapter}-tap`}`)).toHaveLength(1)
    })

    test('a 1 MB body streams through without a declared length', async () => {
      const sessionId = `${adapter}-stream`
      const { stream, events } = streamedBatch(sessionId, 1024 * 1024)
      const res = await send('/api/ingestion/customEvent/batch', {
        method: 'POST',
        headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit)
      expect(await res.json()).toEqual({ success: true, accepted: events })
      const [{ n }] = await core.database.db.rows<{ n: string }>(sql`select count(*) as n from events where session_id = ${sessionId}`)
      expect(Number(n)).toBe(events)
    })

    test('a Content-Length field sent twice with one value is that length (RFC 9110 §8.6), small body or streamed', async () => {
      for (const [name, pad] of [['small', 0], ['streamed', 70_000]] as const) {
        const sessionId = `${adapter}-repeated-length-${name}`
        const body = JSON.stringify({ sessionId, endUserId: `${sessionId}-u`, events: [{ eventName: 'repeated', eventProperties: { pad: 'p'.repeat(pad) } }] })
        const length = Buffer.byteLength(body)
        const { status, text } = await rawRequest(
          relay.url,
          `POST ${PREFIX}/api/ingestion/customEvent/batch HTTP/1.1\r\nHost: shop.test\r\nAuthorization: Bearer ${core.key}\r\nContent-Length: ${length}\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n${body}`,
        )
        expect({ name, status, text }).toEqual({ name, status: 200, text: '{"success":true,"accepted":1}' })
        expect(await core.database.db.rows(sql`select 1 from events where session_id = ${sessionId}`)).toHaveLength(1)
      }
    })

    test('paths outside the public ones are 404 in the error shape, without reaching core', async () => {
      const before = tap.seen.length
      for (const path of ['/api/internal/scan-findings', '/api/projects/1', '/', '/api/ingestion']) {
        const res = await send(path, { method: 'POST', body: '{}' }, () => tapped.url)
        expect(res.status).toBe(404)
        expect(await res.json()).toMatchObject({ success: false, error: { code: 'not_found' } })
      }
      expect(tap.seen.length).toBe(before)
    })
  })
}

describe('elysia adapter inside a prefixed instance', () => {
  // Elysia puts a parent's prefix (or group) before the routes of a plugin it uses; the relay's
  // prefix is the path the browser asks for, wherever in the app the plugin is used.
  const relay = () => elysiaRelay({ upstream: coreUrl, prefix: PREFIX, script: { source: 'window.__sl=1' } })
  const apps = {
    'an app with a prefix': () => new Elysia({ prefix: '/site' }).get('/', () => 'the site').use(relay()),
    'a group': () => new Elysia().group('/site', (app) => app.get('/', () => 'the site').use(relay())),
  }
  for (const [name, make] of Object.entries(apps)) {
    test(`used in ${name}, it still answers ${PREFIX}/...; the site's routes are the site's`, async () => {
      const app = make()
      const ask = (path: string) => app.handle(new Request(`http://shop.test${path}`)).then(async (res) => ({ status: res.status, text: await res.text() }))
      expect(await ask(`${PREFIX}/t.js`)).toEqual({ status: 200, text: 'window.__sl=1' })
      expect(await ask(`${PREFIX}/health/simple`)).toEqual({ status: 200, text: '{"status":"ok"}' })
      expect((await ask(`${PREFIX}/api/projects/1`)).status).toBe(404)
      expect(await ask('/site')).toEqual({ status: 200, text: 'the site' })
    })
  }
})

describe('elysia adapter in an app compiled without aot', () => {
  // `new Elysia({ aot: false })` hands its hooks a context without `server`: the relay took that for
  // `app.handle` (no socket), appended no client address (core, trusting the relay, believed the
  // client's own X-Forwarded-For) and left Bun's idle timeout of 30 s on requests core may keep waiting.
  const apps = {
    'the app itself': () => new Elysia({ aot: false }).use(elysiaRelay({ upstream: tap.url, prefix: PREFIX })),
    'a group': () => new Elysia({ aot: false }).group('/site', (app) => app.use(elysiaRelay({ upstream: tap.url, prefix: PREFIX }))),
  }
  for (const [name, make] of Object.entries(apps)) {
    test(`used in ${name}, the client address is still appended to X-Forwarded-For`, async () => {
      const app = make().listen({ port: 0, hostname: '127.0.0.1' })
      try {
        const before = tap.seen.length
        const res = await fetch(`http://127.0.0.1:${app.server!.port}${PREFIX}/health/simple`, { headers: { 'x-forwarded-for': '203.0.113.9' } })
        expect(await res.text()).toBe('{"status":"ok"}')
        expect(tap.seen.slice(before).map((seen) => seen.headers['x-forwarded-for'])).toEqual(['203.0.113.9, 127.0.0.1'])
      } finally {
        await app.stop(true)
      }
    })
  }
})
