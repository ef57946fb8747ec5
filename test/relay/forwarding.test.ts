import { afterAll, describe, expect, test } from 'bun:test'
import { gunzipSync, gzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { createRelay, fetchClient, type RelayOptions } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { startTap, tappedCore } from './helpers'

// What the relay sends core, seen by a recording hop in front of a real core on a real database.
const { core, coreUrl, tap } = await tappedCore({ env: { MAX_BODY_BYTES: String(4 * 1024 * 1024) } })

const CLIENTS = { socket: socketClient, fetch: () => fetchClient() }
const events = (sessionId: string) => core.database.db.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId} order by event_name`)
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
  describe(`forwarding over ${clientName}`, () => {
    const relayWith = (options: Partial<RelayOptions> = {}) => {
      const relay = createRelay({ upstream: tap.url, prefix: '/_sl', client: makeClient(), ...options })
      return (path: string, init: RequestInit = {}) => relay(new Request(`http://shop.test/_sl${path}`, init), { address: '198.51.100.7' })
    }
    const send = relayWith()
    const lastSeen = () => tap.seen[tap.seen.length - 1]
    const post = (path: string, body: BodyInit, headers: Record<string, string> = {}, via = send) =>
      via(path, { method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json', ...headers }, body })

    test('a small JSON body gets the key as its first member, Authorization is dropped, the rest is byte for byte', async () => {
      const sessionId = `${clientName}-key-1`
      const body = ` {"sessionId":"${sessionId}","eventName":"big","eventProperties":{"n":12345678901234567890,"s":"é"}}`
      const res = await post('/api/ingestion/customEvent', body)
      expect(res.status).toBe(200)
      expect(lastSeen().headers.authorization).toBeUndefined()
      expect(text(lastSeen().body)).toBe(`{"apiKey":${JSON.stringify(core.key)},${body.slice(2)}`)
      expect(lastSeen().headers['content-length']).toBe(String(lastSeen().body.byteLength))
      expect(await events(sessionId)).toEqual([{ event_name: 'big' }])
    })

    test('a body that names its own apiKey, or is not an object, keeps the header and its bytes', async () => {
      const sessionId = `${clientName}-key-2`
      const own = JSON.stringify({ apiKey: core.key, sessionId, eventName: 'own' })
      expect((await post('/api/ingestion/customEvent', own)).status).toBe(200)
      expect(lastSeen().headers.authorization).toBe(`Bearer ${core.key}`)
      expect(text(lastSeen().body)).toBe(own)
      const array = '[1,2]'
      expect((await post('/api/ingestion/customEvent', array)).status).toBe(400)
      expect(text(lastSeen().body)).toBe(array)
      expect(lastSeen().headers.authorization).toBe(`Bearer ${core.key}`)
    })

    test('a gzip body keeps the header and its exact bytes, and is stored', async () => {
      const sessionId = `${clientName}-gzip`
      const compressed = gzipSync(JSON.stringify({ sessionId, endUserId: `${sessionId}-u`, events: [{ eventName: 'zipped' }] }))
      const res = await post('/api/ingestion/customEvent/batch', compressed, { 'content-encoding': 'gzip' })
      expect(await res.json()).toEqual({ success: true, accepted: 1 })
      expect(lastSeen().headers.authorization).toBe(`Bearer ${core.key}`)
      expect(lastSeen().headers['content-encoding']).toBe('gzip')
      expect(Buffer.from(lastSeen().body).equals(compressed)).toBe(true)
      expect(await events(sessionId)).toEqual([{ event_name: 'zipped' }])
    })

    test('a beacon compressed by ?compression=gzip is left alone too', async () => {
      const sessionId = `${clientName}-beacon`
      const compressed = gzipSync(JSON.stringify({ sessionId, eventName: 'beacon' }))
      const res = await post('/api/ingestion/customEvent?compression=gzip', compressed, { 'content-type': 'text/plain' })
      expect(res.status).toBe(200)
      expect(lastSeen().target).toBe('/api/ingestion/customEvent?compression=gzip')
      expect(Buffer.from(lastSeen().body).equals(compressed)).toBe(true)
      expect(await events(sessionId)).toEqual([{ event_name: 'beacon' }])
    })

    test('over 64 KB the body streams untouched with the header; "always" moves the key there too; "never" never', async () => {
      const sessionId = `${clientName}-large`
      const body = JSON.stringify({ sessionId, events: [{ eventName: 'large', eventProperties: { pad: 'p'.repeat(100_000) } }] })
      expect((await post('/api/ingestion/customEvent/batch', body)).status).toBe(200)
      expect(lastSeen().headers.authorization).toBe(`Bearer ${core.key}`)
      expect(text(lastSeen().body)).toBe(body)

      expect((await post('/api/ingestion/customEvent/batch', body, {}, relayWith({ keyInBody: 'always' }))).status).toBe(200)
      expect(lastSeen().headers.authorization).toBeUndefined()
      expect(JSON.parse(text(lastSeen().body)).apiKey).toBe(core.key)

      const small = JSON.stringify({ sessionId, eventName: 'never' })
      expect((await post('/api/ingestion/customEvent', small, {}, relayWith({ keyInBody: 'never' }))).status).toBe(200)
      expect(lastSeen().headers.authorization).toBe(`Bearer ${core.key}`)
      expect(text(lastSeen().body)).toBe(small)
      expect(await events(sessionId)).toEqual([{ event_name: 'large' }, { event_name: 'large' }, { event_name: 'never' }])
    })

    test("hop-by-hop fields, cookies, proxy credentials and the client's own Forwarded or X-Real-IP stay behind; end-to-end fields go on", async () => {
      const res = await send('/health/simple', {
        headers: {
          connection: 'keep-alive, x-hop',
          'x-hop': 'hop',
          'keep-alive': 'timeout=5',
          te: 'trailers',
          'proxy-authorization': 'Basic c2VjcmV0',
          cookie: 'session=secret',
          'user-agent': 'ua/1',
          'content-type': 'application/json',
          'content-encoding': 'identity',
          origin: 'https://shop.test',
          'x-forwarded-for': '203.0.113.1',
          'x-forwarded-host': 'evil.test',
          'x-forwarded-proto': 'gopher',
          forwarded: 'for=8.8.8.8;proto=https;host=evil.test',
          'x-real-ip': '8.8.8.8',
          'true-client-ip': '8.8.8.8',
        },
      })
      expect(res.status).toBe(200)
      const { headers } = lastSeen()
      for (const name of ['x-hop', 'keep-alive', 'te', 'proxy-authorization', 'cookie', 'forwarded', 'x-real-ip', 'true-client-ip']) expect(headers[name]).toBeUndefined()
      expect(headers).toMatchObject({
        'user-agent': 'ua/1',
        'content-type': 'application/json',
        'content-encoding': 'identity',
        origin: 'https://shop.test',
        'x-forwarded-for': '203.0.113.1, 198.51.100.7',
        'x-forwarded-host': 'shop.test',
        'x-forwarded-proto': 'http',
        host: new URL(tap.url).host,
      })
      // Core reflects the Origin for CORS; that answer header comes back through.
      expect(res.headers.get('access-control-allow-origin')).toBe('https://shop.test')
    })

    test('the obsolete Cookie2 stays behind with Cookie', async () => {
      const res = await send('/health/simple', { headers: { cookie: 'session=secret', cookie2: '$Version="1"', 'user-agent': 'ua/1' } })
      expect(res.status).toBe(200)
      const { headers } = lastSeen()
      expect(headers.cookie).toBeUndefined()
      expect(headers.cookie2).toBeUndefined()
      expect(headers['user-agent']).toBe('ua/1')
    })

    test("no User-Agent from the client: none of the relay's own goes to core, which falls back on the tracker's", async () => {
      const sessionId = `${clientName}-no-ua`
      const chrome = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
      const chunk = JSON.stringify({ sessionId, events: [{ type: 4, timestamp: Date.now(), data: { href: 'https://shop.test/' } }], automaticProperties: { userAgent: chrome } })
      expect((await post('/api/ingestion/events', chunk)).status).toBe(200)
      expect(lastSeen().headers['user-agent'] ?? '').toBe('')
      const [session] = await core.database.db.rows<{ browser: string | null }>(sql`select browser from sessions where session_id = ${sessionId}`)
      expect(session).toEqual({ browser: 'Chrome' })
    })

    test("the site's own credentials stay behind: a browser replays HTTP Basic auth on every same-origin request, beacons too", async () => {
      const sessionId = `${clientName}-basic`
      const beacon = JSON.stringify({ apiKey: core.key, sessionId, eventName: 'beacon' })
      const res = await post('/api/ingestion/customEvent', beacon, { authorization: 'Basic c2l0ZTpzZWNyZXQ=', 'content-type': 'text/plain;charset=UTF-8' })
      expect(res.status).toBe(200)
      expect(lastSeen().headers.authorization).toBeUndefined()
      expect(text(lastSeen().body)).toBe(beacon)
      expect(await events(sessionId)).toEqual([{ event_name: 'beacon' }])
    })

    test('CORS preflight goes to core and its answer comes back', async () => {
      const res = await send('/api/ingestion/customEvent', { method: 'OPTIONS', headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST' } })
      expect(res.status).toBe(204)
      expect(res.headers.get('access-control-allow-origin')).toBe('https://shop.test')
      expect(lastSeen().method).toBe('OPTIONS')
    })

    test('the query string goes upstream as sent, on the configured upstream only', async () => {
      await send('/health/simple?apiKey=k&x=%2F..%2F')
      expect(lastSeen().target).toBe('/health/simple?apiKey=k&x=%2F..%2F')
    })

    test('upstream connections are kept alive and reused', async () => {
      const before = tap.seen.length
      for (let i = 0; i < 20; i++) expect((await send('/health/simple')).status).toBe(200)
      const ports = new Set(tap.seen.slice(before).map((r) => r.remotePort))
      expect(ports.size).toBe(1)
    })

    test('an upstream with a path keeps it in front of the forwarded path', async () => {
      const relay = createRelay({ upstream: `${tap.url}/behind/`, prefix: '_sl/', client: makeClient() })
      await relay(new Request('http://shop.test/_sl/health/simple'))
      expect(lastSeen().target).toBe('/behind/health/simple')
    })
  })
}

describe('Set-Cookie from upstream', () => {
  test('is never returned to the client, on either client', async () => {
    const cookieTap = startTap(coreUrl, { 'set-cookie': 'tracking=1; Path=/', 'x-kept': 'yes' })
    try {
      for (const client of [socketClient(), fetchClient()]) {
        const relay = createRelay({ upstream: cookieTap.url, prefix: '/_sl', client })
        const res = await relay(new Request('http://shop.test/_sl/health/simple'))
        expect(res.status).toBe(200)
        expect(res.headers.get('set-cookie')).toBeNull()
        expect(res.headers.get('x-kept')).toBe('yes')
        expect(await res.json()).toEqual({ status: 'ok' })
      }
    } finally {
      cookieTap.close()
    }
  })
})

describe('core behind a proxy that compresses what the request accepts', () => {
  test("the client's bytes are what their Content-Encoding says, on either client", async () => {
    // nginx's `gzip on` or Caddy's `encode` in front of core: gzip whenever Accept-Encoding admits it.
    const gzipping = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const url = new URL(request.url)
        const answer = await fetch(coreUrl + url.pathname + url.search)
        const body = new Uint8Array(await answer.arrayBuffer())
        if (!/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) return new Response(body, { status: answer.status, headers: { 'content-type': 'application/json' } })
        return new Response(gzipSync(body), { status: answer.status, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
      },
    })
    try {
      for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
        const relay = createRelay({ upstream: `http://127.0.0.1:${gzipping.port}`, prefix: '/_sl', client: makeClient() })
        const res = await relay(new Request('http://shop.test/_sl/health/simple', { headers: { 'accept-encoding': 'gzip, deflate, br' } }))
        const bytes = new Uint8Array(await res.arrayBuffer())
        const encoding = res.headers.get('content-encoding')
        // What a browser does with the answer: inflate it as labelled (a fetch client inflated it before, label kept).
        const decoded = (() => {
          try {
            return text(encoding === 'gzip' ? gunzipSync(bytes) : bytes)
          } catch (error) {
            return `not ${encoding}: ${(error as Error).message}`
          }
        })()
        expect({ clientName, status: res.status, decoded }).toEqual({ clientName, status: 200, decoded: '{"status":"ok"}' })
      }
    } finally {
      gzipping.stop(true)
    }
  })
})

describe('an answer framed by both Transfer-Encoding and Content-Length', () => {
  test('goes on without the Content-Length (RFC 9112 §6.3), on either client, for GET and HEAD', async () => {
    // Transfer-Encoding overrides Content-Length, which an intermediary must remove before passing
    // the answer on: kept, it framed the re-chunked body as 999 bytes, and a client waited for the rest.
    const body = '{"status":"ok"}'
    const upstream = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket, chunk) {
          const head = Buffer.from(chunk).toString('latin1').startsWith('HEAD ')
          socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ncontent-length: 999\r\n\r\n${head ? '' : `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`}`)
        },
      },
    })
    try {
      for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
        const relay = createRelay({ upstream: `http://127.0.0.1:${upstream.port}`, prefix: '/_sl', client: makeClient() })
        for (const method of ['GET', 'HEAD']) {
          const res = await relay(new Request('http://shop.test/_sl/health/simple', { method }))
          expect({ clientName, method, status: res.status, length: res.headers.get('content-length'), text: await res.text() }).toEqual({
            clientName,
            method,
            status: 200,
            length: null,
            text: method === 'GET' ? body : '',
          })
        }
      }
    } finally {
      upstream.stop(true)
    }
  })
})
