import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Subprocess } from 'bun'
import { startCore } from '../helpers/core'
import { rawRequest, RESOLVED_TO_HEALTH, startEndlessUpstream, startLineRecorder, startNodeFixture, startSilentUpstream, startStallingUpstream, startTap } from './helpers'

// The Node adapter under Node itself (node:http and undici's fetch), not Bun's emulation of them.
const core = await startCore()
const coreUrl = await core.listen()
const tap = startTap(coreUrl)
const recorder = startLineRecorder()
const running: Subprocess<'ignore', 'pipe', 'pipe'>[] = []
let url: string
let toRecorder: string

const startNode = (upstream: string, timeoutMs?: number) => startNodeFixture(running, upstream, timeoutMs)

beforeAll(async () => {
  ;[url, toRecorder] = await Promise.all([startNode(tap.url), startNode(recorder.url)])
})
afterAll(async () => {
  for (const node of running) node.kill()
  await Promise.all(running.map((node) => node.exited))
  tap.close()
  recorder.close()
  await core.close()
})

test('an event relayed by Node is stored, with the key in the body and the client address forwarded', async () => {
  const before = tap.seen.length
  const res = await fetch(`${url}/_sl/api/ingestion/customEvent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json', cookie: 'session=secret' },
    body: JSON.stringify({ sessionId: 'node-runtime', endUserId: 'node-runtime-u', eventName: 'from-node' }),
  })
  expect(await res.json()).toEqual({ success: true })
  const [seen] = tap.seen.slice(before)
  expect(seen.headers.authorization).toBeUndefined()
  expect(seen.headers.cookie).toBeUndefined()
  expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1')
  expect(JSON.parse(new TextDecoder().decode(seen.body)).apiKey).toBe(core.key)
  expect(await core.database.db.rows(sql`select 1 from events where session_id = 'node-runtime'`)).toHaveLength(1)
})

test('a large body streams through Node, and unknown paths are 404', async () => {
  const events = Array.from({ length: 200 }, (_, i) => ({ eventName: `n${i}`, eventProperties: { pad: 'p'.repeat(500) } }))
  const res = await fetch(`${url}/_sl/api/ingestion/customEvent/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ sessionId: 'node-runtime-large', endUserId: 'node-runtime-u', events }),
  })
  expect(await res.json()).toEqual({ success: true, accepted: 200 })
  const missing = await fetch(`${url}/_sl/api/internal/scan-findings`, { method: 'POST', body: '{}' })
  expect(missing.status).toBe(404)
  expect(await missing.json()).toMatchObject({ success: false, error: { code: 'not_found' } })
})

test("dot segments, encoded or not, and backslashes in Node's raw target are resolved as on Bun: each of these reaches the upstream as /health", async () => {
  for (const target of RESOLVED_TO_HEALTH) {
    const before = recorder.targets.length
    const { status, text } = await rawRequest(toRecorder, `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
    expect({ target, status, text, reached: recorder.targets.slice(before) }).toEqual({ target, status: 200, text: '{"status":"ok"}', reached: ['/health'] })
  }
})

test("a method a Web Request cannot carry (TRACE) is 405 in the error shape, and Node's relay keeps serving", async () => {
  // A server of its own: before, this request ended the Node process that served it.
  const own = await startNode(tap.url)
  const before = tap.seen.length
  const traced = await rawRequest(own, 'TRACE /_sl/health HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n')
  expect({ status: traced.status, allow: traced.headers.allow, coded: traced.text.includes('"code":"method_not_allowed"') }).toEqual({ status: 405, allow: 'GET, HEAD, OPTIONS', coded: true })
  const next = await fetch(`${own}/_sl/health/simple`)
  expect({ status: next.status, body: await next.json() }).toEqual({ status: 200, body: { status: 'ok' } })
  expect(tap.seen.slice(before).map((r) => `${r.method} ${r.target}`)).toEqual(['GET /health/simple'])
})

test("a target or Host with user info (which undici's Request refuses) is 400, and Node's relay keeps serving", async () => {
  // A server of its own: before, either request ended the Node process that served it.
  const own = await startNode(tap.url)
  const before = tap.seen.length
  for (const head of [
    'GET /_sl/health/simple HTTP/1.1\r\nHost: user@shop.test\r\nConnection: close\r\n\r\n',
    'GET http://user:secret@shop.test/_sl/health/simple HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n',
  ]) {
    const { status } = await rawRequest(own, head)
    expect({ head, status }).toEqual({ head, status: 400 })
  }
  const next = await fetch(`${own}/_sl/health/simple`)
  expect({ status: next.status, body: await next.json() }).toEqual({ status: 200, body: { status: 'ok' } })
  expect(tap.seen.slice(before).map((r) => `${r.method} ${r.target}`)).toEqual(['GET /health/simple'])
})

test("a client gone while the answer streams: Node's relay gives up core's answer and its connection", async () => {
  const upstream = startEndlessUpstream()
  try {
    const endless = await startNode(upstream.url)
    for (const init of [{ method: 'GET' }, { method: 'POST', body: '{}' }]) {
      const client = new AbortController()
      const res = await fetch(`${endless}/_sl/${init.method === 'GET' ? 'health' : 'api/ingestion/events'}`, { ...init, signal: client.signal })
      await res.body!.getReader().read()
      client.abort()
    }
    // The two connections that carried an answer (undici may open idle ones besides, closed on its own schedule).
    const deadline = Date.now() + 3000
    while (upstream.connections.filter((c) => c.closed).length < 2 && Date.now() < deadline) await Bun.sleep(10)
    expect(upstream.connections.filter((c) => c.closed).length).toBeGreaterThanOrEqual(2)
  } finally {
    upstream.close()
  }
})

test("requests pipelined on one connection reach core one at a time under Node: one write of 50 opens one connection to core, and each is answered in turn", async () => {
  const silent = startSilentUpstream()
  const client = await (async () => {
    const node = await startNode(silent.url)
    const { hostname, port } = new URL(node)
    return Bun.connect({ hostname, port: Number(port), socket: { data() {} } })
  })()
  try {
    client.write('GET /_sl/health HTTP/1.1\r\nHost: shop.test\r\n\r\n'.repeat(50))
    const deadline = Date.now() + 3000
    while (silent.connections.length === 0 && Date.now() < deadline) await Bun.sleep(10)
    await Bun.sleep(300)
    expect(silent.connections.length).toBe(1)
  } finally {
    client.end()
    silent.close()
  }
  // Twenty pipelined requests, all answered: the first answer's head is read as `status`, the 19 after it are in `text`.
  const { status, text } = await rawRequest(toRecorder, `${'GET /_sl/health HTTP/1.1\r\nHost: shop.test\r\n\r\n'.repeat(19)}GET /_sl/health/simple HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
  expect({ status, after: text.match(/HTTP\/1\.1 200/g)?.length }).toEqual({ status: 200, after: 19 })
})

test("an answer that stalls mid-body: Node's response ends, closing the client's connection, after timeoutMs of silence; core's connection is closed, the next request gets a fresh one", async () => {
  for (const framing of ['length', 'chunked'] as const) {
    const upstream = startStallingUpstream(framing)
    try {
      const stalled = await startNode(upstream.url, 300)
      const started = Date.now()
      const res = await fetch(`${stalled}/_sl/health`)
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      let bytes = 0
      const how = await Promise.race([
        (async () => {
          for (;;) {
            const { done, value } = await reader.read()
            if (done) return 'ended'
            bytes += value.byteLength
          }
        })().catch(() => 'failed'),
        Bun.sleep(3000).then(() => 'hung'),
      ])
      expect({ framing, how, bytes }).toEqual({ framing, how: 'failed', bytes: 100 })
      expect(Date.now() - started).toBeLessThan(2000)
      const deadline = Date.now() + 3000
      while (!upstream.connections[0].closed && Date.now() < deadline) await Bun.sleep(10)
      expect(upstream.connections[0]).toEqual({ targets: ['/health'], closed: true })
      const next = await fetch(`${stalled}/_sl/health/simple`)
      expect({ status: next.status, text: await next.text() }).toEqual({ status: 200, text: 'ok' })
      expect(upstream.connections.slice(1).flatMap((c) => c.targets)).toEqual(['/health/simple'])
    } finally {
      upstream.close()
    }
  }
})

test("a body the relay answers without reading (404, 405) is discarded by Node: the next request on the connection is answered", async () => {
  const body = ' '.repeat(1024 * 1024)
  for (const head of [`POST /_sl/api/projects/1 HTTP/1.1`, `PUT /_sl/api/ingestion/events HTTP/1.1`]) {
    const sent = rawRequest(url, `${head}\r\nHost: shop.test\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /_sl/health/simple HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
    const answered = await Promise.race([sent.then(({ status, text }) => ({ status, next: text.match(/HTTP\/1\.1 \d+/g) })), Bun.sleep(5000).then(() => 'hung')])
    expect({ head, answered }).toEqual({ head, answered: { status: head.startsWith('POST') ? 404 : 405, next: ['HTTP/1.1 200'] } })
  }
})

test("as middleware, core's answer after the site has answered (a timeout middleware) is dropped, and Node keeps serving", async () => {
  const slow = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Bun.sleep(300).then(() => Response.json({ status: 'ok' })) })
  try {
    const site = await startNodeFixture(running, `http://127.0.0.1:${slow.port}`, undefined, 100)
    const node = running.at(-1)!
    const first = await fetch(`${site}/_sl/health`)
    expect({ status: first.status, text: await first.text() }).toEqual({ status: 503, text: 'the site timed out' })
    // Core answers at 300 ms: writing its headers after the site's threw, and the rejection ended Node.
    await Bun.sleep(500)
    const next = await fetch(`${site}/`).then(async (res) => res.text(), () => 'refused')
    expect({ next, exitCode: node.exitCode }).toEqual({ next: 'the site', exitCode: null })
  } finally {
    slow.stop(true)
  }
})
