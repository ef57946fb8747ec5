import { afterAll, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { createRelay } from '@sightline/relay'
import { bunRelay } from '@sightline/relay/adapters/bun'
import { startCore } from '../helpers/core'
import { rawRequest, RESOLVED_TO_HEALTH, startLineRecorder, startRelay, startTap, type AdapterName } from './helpers'

// The relay is never an open proxy: raw request lines (no client-side normalization) against the
// real servers, with a recording hop in front of core to see what, if anything, got through.
const core = await startCore()
const coreUrl = await core.listen()
const tap = startTap(coreUrl)
// A second server the relay must never be talked into reaching.
const elsewhere = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('elsewhere') })
afterAll(async () => {
  tap.close()
  elsewhere.stop(true)
  await core.close()
})

const other = `127.0.0.1:${elsewhere.port}`

/** Request targets that try to leave the prefix, the public paths, or the configured upstream. */
const ATTEMPTS = [
  '/_sl/../api/projects',
  '/_sl/..%2fapi/projects',
  '/_sl/%2e%2e/api/internal/scan-findings',
  '/_sl/api/ingestion/..%2F..%2Fapi%2Finternal%2Fscan-findings',
  '/_sl/api/ingestion/%2e%2e/%2e%2e/api/projects',
  '/_sl/api/ingestion/customEvent/..;/..;/api/projects',
  '/_sl/api/ingestion\\..\\..\\api\\projects',
  '/_sl//api/ingestion/customEvent',
  `/_sl//${other}/health`,
  `/_sl/http://${other}/health`,
  `/_sl/http:%2F%2F${other}%2Fhealth`,
  '/_sl/api/ingestion/%63ustomEvent',
  '/_sl/api/internal/scan-findings',
  '/_slx/health',
  '/health',
]

for (const adapter of ['bun', 'node', 'elysia', 'standalone'] as AdapterName[]) {
  describe(`${adapter}: no way out of the public paths`, () => {
    let relay: Awaited<ReturnType<typeof startRelay>>
    test('starts', async () => {
      relay = await startRelay(adapter, { upstream: tap.url, prefix: '/_sl' })
    })
    afterAll(() => relay?.close())

    for (const target of ATTEMPTS) {
      test(`${target} reaches nothing but core's public paths`, async () => {
        const before = tap.seen.length
        const { status } = await rawRequest(relay.url, `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        const reached = tap.seen.slice(before).map((r) => r.target)
        // Either refused, or (where the server normalized dot segments itself) a public path on core.
        for (const path of reached) expect(['/health', '/health/simple'].includes(path) || path.startsWith('/api/ingestion/')).toBe(true)
        if (reached.length === 0) expect(status).toBeGreaterThanOrEqual(400)
      })
    }

    test('an absolute-form request target still goes to the configured upstream only', async () => {
      const before = tap.seen.length
      const { status, text } = await rawRequest(relay.url, `GET http://${other}/_sl/health/simple HTTP/1.1\r\nHost: ${other}\r\nConnection: close\r\n\r\n`)
      expect(text).not.toContain('elsewhere')
      if (status === 200) expect(tap.seen.slice(before).map((r) => r.target)).toEqual(['/health/simple'])
    })

    test('a client gone before its request is relayed cannot name its own address: X-Forwarded-For never ends in what it sent', async () => {
      const before = tap.seen.length
      for (let i = 0; i < 20; i++) {
        // Written and reset at once: by the time the relay runs, the runtime may no longer know the peer.
        const socket = await Bun.connect({ hostname: '127.0.0.1', port: Number(new URL(relay.url).port), socket: { data() {}, error() {} } })
        socket.write(`POST /_sl/api/ingestion/ip-info HTTP/1.1\r\nHost: shop.test\r\nAuthorization: Bearer ${core.key}\r\nX-Forwarded-For: 8.8.8.8\r\nContent-Length: 19\r\n\r\n{"sessionId":"rst"}`)
        socket.terminate()
      }
      await Bun.sleep(500)
      const lists = tap.seen.slice(before).map((r) => r.headers['x-forwarded-for'])
      for (const list of lists) expect(['8.8.8.8, 127.0.0.1', '8.8.8.8, unknown']).toContain(list)
    })

    test('CONNECT and TRACE are refused', async () => {
      const before = tap.seen.length
      for (const line of [`CONNECT ${other} HTTP/1.1`, 'TRACE /_sl/health HTTP/1.1']) {
        const { status, text } = await rawRequest(relay.url, `${line}\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        // An error status, or (node:http, which hands CONNECT to a 'connect' listener there is none of) the connection closed unanswered.
        if (status !== 0) expect(status).toBeGreaterThanOrEqual(400)
        expect(text).not.toContain('elsewhere')
      }
      expect(tap.seen.length).toBe(before)
    })
  })
}

for (const adapter of ['bun', 'node', 'node-middleware', 'elysia', 'deno', 'standalone'] as AdapterName[]) {
  describe(`${adapter}: dot segments and backslashes are resolved first`, () => {
    const upstream = startLineRecorder()
    let relay: Awaited<ReturnType<typeof startRelay>>
    test('starts', async () => {
      relay = await startRelay(adapter, { upstream: upstream.url, prefix: '/_sl' })
    })
    afterAll(async () => {
      await relay?.close()
      upstream.close()
    })

    for (const target of RESOLVED_TO_HEALTH) {
      test(`${target} reaches the upstream as /health, byte for byte`, async () => {
        const before = upstream.targets.length
        const { status, text } = await rawRequest(relay.url, `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        expect({ status, text }).toEqual({ status: 200, text: '{"status":"ok"}' })
        expect(upstream.targets.slice(before)).toEqual(['/health'])
      })
    }
  })
}

describe('node-middleware: which requests are the relay\'s is decided on the resolved path, as on Bun', () => {
  for (const [target, owner] of [
    ['/_sl/../api/orders', 'the site'],
    ['/_sl/%2e%2e/api/orders', 'the site'],
    ['/shop/../_sl/health', 'the relay'],
    ['/shop/..\\_sl\\health', 'the relay'],
  ]) {
    test(`${target} is ${owner}'s`, async () => {
      const relay = await startRelay('node-middleware', { upstream: tap.url, prefix: '/_sl' })
      try {
        const before = tap.seen.length
        const { status, text } = await rawRequest(relay.url, `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        if (owner === 'the site') expect({ status, text, reached: tap.seen.length - before }).toEqual({ status: 200, text: 'the site', reached: 0 })
        else expect({ status, reached: tap.seen.slice(before).map((r) => r.target) }).toEqual({ status: 200, reached: ['/health'] })
      } finally {
        await relay.close()
      }
    })
  }
})

describe('a peer the runtime no longer knows', () => {
  test('is appended to X-Forwarded-For as unknown, so core behind it locates no one rather than the address the client wrote', async () => {
    const trusting = await startCore({ env: { TRUSTED_PROXIES: '127.0.0.1' } })
    try {
      const handle = bunRelay({ upstream: await trusting.listen(), prefix: '/_sl' })
      // What Bun's server answers for a request whose connection is already gone.
      const gone = { requestIP: () => null, timeout: () => {} } as unknown as Server<unknown>
      const send = (server: Server<unknown>) =>
        handle(
          new Request('http://shop.test/_sl/api/ingestion/ip-info', {
            method: 'POST',
            headers: { authorization: `Bearer ${trusting.key}`, 'x-forwarded-for': '8.8.8.8' },
            body: JSON.stringify({ sessionId: 'gone', endUserId: 'gone-user' }),
          }),
          server,
        ).then((r) => r.json())
      expect(await send(gone)).toEqual({ success: true, geo: null })
      // Told the peer, the relay appends it and core reads past it as usual.
      const known = { requestIP: () => ({ address: '127.0.0.1', port: 1, family: 'IPv4' }), timeout: () => {} } as unknown as Server<unknown>
      expect((await send(known)).geo).toMatchObject({ country: 'US' })
    } finally {
      await trusting.close()
    }
  })
})

describe("the client's own X-Forwarded-For", () => {
  test('names no address to core unless the peer in front of the relay is a trusted proxy', async () => {
    // Core trusts the relay (127.0.0.1), as the README asks; 8.8.8.8 would locate to the US.
    const trusting = await startCore({ env: { TRUSTED_PROXIES: '127.0.0.1' } })
    try {
      const handle = bunRelay({ upstream: await trusting.listen(), prefix: '/_sl' })
      const from = (address: string) => ({ requestIP: () => ({ address, port: 1, family: 'IPv4' }), timeout: () => {} }) as unknown as Server<unknown>
      const send = (peer: string) =>
        handle(
          new Request('http://shop.test/_sl/api/ingestion/ip-info', {
            method: 'POST',
            headers: { authorization: `Bearer ${trusting.key}`, 'x-forwarded-for': '8.8.8.8', forwarded: 'for=8.8.8.8', 'x-real-ip': '8.8.8.8' },
            body: JSON.stringify({ sessionId: 'spoof', endUserId: 'spoof-user' }),
          }),
          from(peer),
        ).then((r) => r.json())
      // A browser (a peer nobody listed): core takes the peer the relay saw, which locates nowhere.
      expect(await send('127.0.0.2')).toEqual({ success: true, geo: null })
      // A load balancer the operator listed in TRUSTED_PROXIES: the client it names is believed.
      expect((await send('127.0.0.1')).geo).toMatchObject({ country: 'US' })
    } finally {
      await trusting.close()
    }
  })
})

describe('a method no Web Request can carry (TRACE) is refused as the relay refuses any other method, by path', () => {
  for (const adapter of ['bun', 'node', 'node-middleware', 'elysia', 'standalone'] as AdapterName[]) {
    test(`${adapter}: 405 naming the script's own methods on <prefix>/t.js, 404 on a path the relay does not serve`, async () => {
      const relay = await startRelay(adapter, { upstream: tap.url, prefix: '/_sl', script: { source: 'window.a=1' } })
      try {
        const before = tap.seen.length
        const answers: { target: string; status: number; allow?: string; code?: string }[] = []
        for (const target of ['/_sl/t.js', '/_sl/nope', '/_sl/health']) {
          const { status, headers, text } = await rawRequest(relay.url, `TRACE ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
          answers.push({ target, status, allow: headers.allow, code: text.match(/"code":"(\w+)"/)?.[1] })
        }
        expect(answers).toEqual([
          // RFC 9110 §15.5.6: Allow lists the target's methods; the script is GET and HEAD only.
          { target: '/_sl/t.js', status: 405, allow: 'GET, HEAD', code: 'method_not_allowed' },
          { target: '/_sl/nope', status: 404, allow: undefined, code: 'not_found' },
          { target: '/_sl/health', status: 405, allow: 'GET, HEAD, OPTIONS', code: 'method_not_allowed' },
        ])
        expect(tap.seen.length).toBe(before)
      } finally {
        await relay.close()
      }
    })
  }
})

describe("the relay's own 405", () => {
  test("lists the methods core serves on that path, as core's own 405 does (RFC 9110 §15.5.6), not every method the relay forwards", async () => {
    const relay = createRelay({ upstream: tap.url, prefix: '/_sl' })
    const before = tap.seen.length
    for (const [method, path] of [
      ['PUT', '/health'],
      ['DELETE', '/health/simple'],
      ['PUT', '/api/ingestion/customEvent'],
      ['PATCH', '/api/ingestion/events'],
    ]) {
      const direct = await fetch(coreUrl + path, { method })
      const relayed = await relay(new Request(`http://shop.test/_sl${path}`, { method }))
      expect({ method, path, status: relayed.status, allow: relayed.headers.get('allow') }).toEqual({ method, path, status: 405, allow: direct.headers.get('allow') })
    }
    expect(tap.seen.length).toBe(before)
  })
})
