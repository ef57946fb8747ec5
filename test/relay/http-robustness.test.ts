import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { rawRequest, startNodeFixture, startRelay, type RunningRelay } from './helpers'

// Unusual request lines and Host fields, sent raw to the relay under real Node (node:http, the Node
// adapter's own parsing of `req.url` and `Host`) and under Bun.serve, against a fake upstream that
// records what arrives. A request must be the relay's, and forwarded the same way, on every runtime.

interface Seen {
  target: string
  headers: Record<string, string>
}

/** A fake core: records the target and headers of each request and answers `{"status":"ok"}`. */
function startRecorder() {
  const seen: Seen[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      await request.arrayBuffer()
      const url = new URL(request.url)
      seen.push({ target: url.pathname + url.search, headers: Object.fromEntries(request.headers) })
      return Response.json({ status: 'ok' })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, seen, close: () => server.stop(true) }
}

const upstream = startRecorder()
const running: Subprocess<'ignore', 'pipe', 'pipe'>[] = []
const relays: Record<'node' | 'bun' | 'standalone', string> = { node: '', bun: '', standalone: '' }
let bun: RunningRelay
let standalone: RunningRelay

beforeAll(async () => {
  relays.node = await startNodeFixture(running, upstream.url)
  bun = await startRelay('bun', { upstream: upstream.url, prefix: '/_sl' })
  relays.bun = bun.url
  standalone = await startRelay('standalone', { upstream: upstream.url, prefix: '/_sl' })
  relays.standalone = standalone.url
})
afterAll(async () => {
  for (const node of running) node.kill()
  await Promise.all(running.map((node) => node.exited))
  await bun?.close()
  await standalone?.close()
  upstream.close()
})

for (const runtime of ['node', 'bun', 'standalone'] as const) {
  describe(`${runtime}: unusual request targets and Host fields`, () => {
    test('a target that starts with "//" is an empty segment, 404 in the error shape, not a scheme-relative URL whose "host" is dropped', async () => {
      // Bun takes `//shop.test/_sl/health` as the path it is; Node's adapter parsed it against a base,
      // as a scheme-relative URL, and forwarded `/health` for a path that is not under the prefix.
      for (const target of ['//shop.test/_sl/health', '//evil.test/_sl/api/ingestion/events']) {
        const before = upstream.seen.length
        const { status, text } = await rawRequest(relays[runtime], `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        expect({ target, status, code: text.includes('"code":"not_found"'), reached: upstream.seen.slice(before).map((s) => s.target) }).toEqual({ target, status: 404, code: true, reached: [] })
      }
    })

    test('an empty Host (valid HTTP/1.1, RFC 9112 §3.2) is relayed like any other request', async () => {
      const before = upstream.seen.length
      const { status, text } = await rawRequest(relays[runtime], 'GET /_sl/health HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n')
      expect({ status, text, reached: upstream.seen.slice(before).map((s) => s.target) }).toEqual({ status: 200, text: '{"status":"ok"}', reached: ['/health'] })
    })

    test("X-Forwarded-Proto is the connection's scheme, not one an absolute-form target claims", async () => {
      // Plain HTTP to the relay: the client's own X-Forwarded-Proto is dropped for this very reason,
      // and `GET https://...` or `GET ftp://...` must not set it either.
      for (const target of ['https://shop.test/_sl/health', 'ftp://shop.test/_sl/health']) {
        const before = upstream.seen.length
        const { status } = await rawRequest(relays[runtime], `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        const reached = upstream.seen.slice(before)
        // Refused (Bun answers 400 to an ftp target) or forwarded as plain http.
        if (reached.length === 0) expect(status).toBeGreaterThanOrEqual(400)
        for (const seen of reached) expect({ target, proto: seen.headers['x-forwarded-proto'] }).toEqual({ target, proto: 'http' })
      }
    })

    test('HTTP/1.0 without Host: X-Forwarded-Host is left out, not invented', async () => {
      const before = upstream.seen.length
      const { status } = await rawRequest(relays[runtime], 'GET /_sl/health HTTP/1.0\r\n\r\n')
      const [seen] = upstream.seen.slice(before)
      expect({ status, target: seen?.target, forwardedHost: seen?.headers['x-forwarded-host'] as string | undefined }).toEqual({ status: 200, target: '/health', forwardedHost: undefined })
    })

    test('a well-formed request still arrives after all of the above', async () => {
      const res = await fetch(`${relays[runtime]}/_sl/health/simple`)
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: { status: 'ok' } })
    })
  })
}
