import { afterAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { bunRelay } from '@sightline/relay/adapters/bun'
import { elysiaRelay } from '@sightline/relay/adapters/elysia'
import { Elysia } from 'elysia'
import { closedPortUrl, rawRequest, startEndlessUpstream, startRelay, startSilentUpstream, startUnopenableUpstream, tappedCore, type AdapterName } from './helpers'

const { core, coreUrl, tap } = await tappedCore()

const CLIENTS = { socket: socketClient, fetch: () => fetchClient() }
const errorOf = async (res: Response) => ((await res.json()) as { success: boolean; error: { code: string; message: string } })

/** A body that hands out `pieces` chunks of `size` bytes, only as it is pulled, and counts what was pulled. */
function countedBody(pieces: number, size: number, waitBeforeEach?: (index: number) => Promise<void>) {
  const state = { pulled: 0, bytes: 0 }
  const chunk = new Uint8Array(size).fill(0x20) // spaces: valid JSON padding
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (state.pulled === pieces) return controller.close()
        await waitBeforeEach?.(state.pulled)
        state.pulled++
        state.bytes += size
        controller.enqueue(chunk)
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, state }
}

const until = async (condition: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(5)
  }
}

for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
  describe(`failures over ${clientName}`, () => {
    test('core down: 502 in the error shape, with Retry-After', async () => {
      const relay = createRelay({ upstream: await closedPortUrl(), prefix: '/_sl', client: makeClient() })
      const res = await relay(new Request('http://shop.test/_sl/api/ingestion/customEvent', { method: 'POST', body: '{"sessionId":"s","eventName":"e"}' }))
      expect(res.status).toBe(502)
      expect(res.headers.get('retry-after')).toBe('5')
      expect(await errorOf(res)).toMatchObject({ success: false, error: { code: 'upstream_unreachable' } })
    })

    /** A GET through a relay with a timeout of 300 ms: 504 upstream_timeout in the error shape, after the timeout. */
    const expectTimedOut = async (upstream: string) => {
      const relay = createRelay({ upstream, prefix: '/_sl', client: makeClient(), timeoutMs: 300 })
      const started = Date.now()
      const res = await relay(new Request('http://shop.test/_sl/health'))
      expect(res.status).toBe(504)
      expect(Date.now() - started).toBeGreaterThanOrEqual(290)
      expect(Date.now() - started).toBeLessThan(2000)
      expect(await errorOf(res)).toMatchObject({ success: false, error: { code: 'upstream_timeout' } })
    }

    test('core too slow: 504 in the error shape after the timeout', async () => {
      const silent = startSilentUpstream()
      try {
        await expectTimedOut(silent.url)
        // The stuck connection is given up, not left open.
        await until(() => silent.connections.every((c) => c.closed))
      } finally {
        silent.close()
      }
    })

    test('a connection to core that never opens: 504 after the timeout, as for a core that never answers', async () => {
      const unopenable = await startUnopenableUpstream()
      if (!unopenable) return console.warn('skipped: no python3 to make a listener that accepts nothing')
      try {
        await expectTimedOut(unopenable.url)
      } finally {
        unopenable.close()
      }
    })

    test('a TLS handshake core never answers: 504 after the timeout', async () => {
      // The TCP connection is accepted, the handshake never answered.
      const silent = startSilentUpstream()
      try {
        await expectTimedOut(silent.url.replace('http:', 'https:'))
      } finally {
        silent.close()
      }
    })

    test('a slow upload is the client\'s pace: the timeout waits for core, not for the body', async () => {
      const relay = createRelay({ upstream: coreUrl, prefix: '/_sl', client: makeClient(), timeoutMs: 400 })
      const sessionId = `${clientName}-slow-upload`
      const head = new TextEncoder().encode(`{"sessionId":"${sessionId}","endUserId":"${sessionId}-u","events":[{"eventName":"slow"}]`)
      const { stream } = countedBody(8, 16 * 1024, (i) => (i === 0 ? Promise.resolve() : Bun.sleep(150)))
      // JSON text, then 8 pieces of spaces 150 ms apart (1.2 s in all), then the closing brace.
      const reader = stream.getReader()
      let stage = 0
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (stage === 0) return (stage = 1), controller.enqueue(head)
          const { done, value } = await reader.read()
          if (!done) return controller.enqueue(value)
          controller.enqueue(new TextEncoder().encode('}'))
          controller.close()
        },
      })
      const res = await relay(
        new Request('http://shop.test/_sl/api/ingestion/customEvent/batch', { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body, duplex: 'half' } as RequestInit),
      )
      expect(await res.json()).toEqual({ success: true, accepted: 1 })
      expect(await core.database.db.rows(sql`select 1 from events where session_id = ${sessionId}`)).toHaveLength(1)
    })

    test('an answer whose fields a Response cannot carry is 502, and its connection is closed', async () => {
      const closed: boolean[] = []
      const upstream = Bun.listen<{ index: number }>({
        hostname: '127.0.0.1',
        port: 0,
        socket: {
          open: (socket) => void (socket.data = { index: closed.push(false) - 1 }),
          data: (socket) => void socket.write('HTTP/1.1 200 OK\r\nx-bad: a\nb\r\ncontent-length: 2\r\n\r\n{}'),
          close: (socket) => void (closed[socket.data.index] = true),
        },
      })
      try {
        const relay = createRelay({ upstream: `http://127.0.0.1:${upstream.port}`, prefix: '/_sl', client: makeClient(), timeoutMs: 5000 })
        const started = Date.now()
        const res = await relay(new Request('http://shop.test/_sl/health'))
        expect(res.status).toBe(502)
        expect(Date.now() - started).toBeLessThan(2000)
        expect(await errorOf(res)).toMatchObject({ success: false, error: { code: 'upstream_unreachable' } })
        await until(() => closed.length > 0 && closed.every(Boolean))
      } finally {
        upstream.stop(true)
      }
    })

    test('a declared body over maxBodyBytes is 413 without contacting core', async () => {
      const before = tap.seen.length
      const relay = createRelay({ upstream: tap.url, prefix: '/_sl', client: makeClient(), maxBodyBytes: 1000 })
      const res = await relay(new Request('http://shop.test/_sl/api/ingestion/customEvent', { method: 'POST', headers: { 'content-length': '1001' }, body: 'x'.repeat(1001) }))
      expect(res.status).toBe(413)
      expect(await errorOf(res)).toMatchObject({ error: { code: 'payload_too_large' } })
      expect(tap.seen.length).toBe(before)
    })

    test('under a maxBodyBytes below 64 KB, a body of undeclared size past it is 413 without contacting core', async () => {
      const before = tap.seen.length
      const relay = createRelay({ upstream: tap.url, prefix: '/_sl', client: makeClient(), maxBodyBytes: 1000 })
      const { stream } = countedBody(1, 5000)
      const res = await relay(new Request('http://shop.test/_sl/api/ingestion/customEvent', { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body: stream, duplex: 'half' } as RequestInit))
      expect(res.status).toBe(413)
      expect(await errorOf(res)).toMatchObject({ error: { code: 'payload_too_large' } })
      expect(tap.seen.length).toBe(before)
    })

    test('a streamed body that passes maxBodyBytes is cut off with 413; core stores nothing', async () => {
      const relay = createRelay({ upstream: coreUrl, prefix: '/_sl', client: makeClient(), maxBodyBytes: 200_000 })
      const { stream, state } = countedBody(100, 10_000)
      const res = await relay(
        new Request('http://shop.test/_sl/api/ingestion/customEvent', { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body: stream, duplex: 'half' } as RequestInit),
      )
      expect(res.status).toBe(413)
      expect(state.bytes).toBeLessThanOrEqual(210_000)
    })

    test('a large body is streamed: core gets its first bytes before the client has sent the rest', async () => {
      const silent = startSilentUpstream()
      try {
        const relay = createRelay({ upstream: silent.url, prefix: '/_sl', client: makeClient(), timeoutMs: 5000 })
        let released!: () => void
        const gate = new Promise<void>((resolve) => (released = resolve))
        // The client holds its last piece back until the upstream has seen bytes of the body.
        const { stream } = countedBody(20, 16 * 1024, (i) => (i === 19 ? gate : Promise.resolve()))
        const answer = relay(new Request('http://shop.test/_sl/api/ingestion/events', { method: 'POST', body: stream, duplex: 'half' } as RequestInit))
        await until(() => (silent.connections[0]?.received ?? 0) > 19 * 16 * 1024)
        released()
        await until(() => (silent.connections[0]?.received ?? 0) >= 20 * 16 * 1024)
        silent.close()
        expect([502, 504]).toContain((await answer).status)
      } finally {
        silent.close()
      }
    })

    test('backpressure: an upstream that does not read stops the relay reading the client', async () => {
      const silent = startSilentUpstream({ read: false })
      try {
        const relay = createRelay({ upstream: silent.url, prefix: '/_sl', client: makeClient(), timeoutMs: 1500 })
        const { stream, state } = countedBody(4096, 64 * 1024) // 256 MB on offer
        const answer = relay(new Request('http://shop.test/_sl/api/ingestion/events', { method: 'POST', body: stream, duplex: 'half' } as RequestInit))
        await Bun.sleep(1000)
        // Socket buffers hold a few MB at most; the rest of the 256 MB is never pulled.
        expect(state.bytes).toBeLessThan(64 * 1024 * 1024)
        expect((await answer).status).toBe(504)
      } finally {
        silent.close()
      }
    })

    test('a client that goes away mid-body aborts the upstream request', async () => {
      const silent = startSilentUpstream()
      try {
        const relay = createRelay({ upstream: silent.url, prefix: '/_sl', client: makeClient(), timeoutMs: 10_000 })
        const client = new AbortController()
        let fail!: (error: Error) => void
        const cut = new Promise<void>((_, reject) => (fail = reject))
        const { stream } = countedBody(100, 16 * 1024, (i) => (i === 10 ? cut : Promise.resolve()))
        const answer = relay(new Request('http://shop.test/_sl/api/ingestion/events', { method: 'POST', body: stream, duplex: 'half', signal: client.signal } as RequestInit))
        await until(() => (silent.connections[0]?.received ?? 0) >= 10 * 16 * 1024)
        client.abort()
        fail(new Error('client went away'))
        await until(() => silent.connections[0].closed)
        expect(silent.connections[0].received).toBeLessThan(100 * 16 * 1024)
        expect((await answer).status).toBe(499)
      } finally {
        silent.close()
      }
    })
  })
}

describe('client abort against a real core, through the Bun adapter', () => {
  test('the half-sent batch is not stored', async () => {
    const relay = await startRelay('bun', { upstream: coreUrl, prefix: '/_sl' })
    try {
      const controller = new AbortController()
      const head = new TextEncoder().encode(`{"sessionId":"aborted","events":[{"eventName":"a"},`)
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (sent++ === 0) return c.enqueue(head)
          c.enqueue(new Uint8Array(70_000).fill(0x20))
          if (sent > 3) {
            await Bun.sleep(50)
            controller.abort()
          }
        },
      })
      await fetch(`${relay.url}/_sl/api/ingestion/customEvent/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${core.key}` },
        body,
        signal: controller.signal,
        duplex: 'half',
      } as RequestInit).catch(() => null)
      await Bun.sleep(200)
      expect(await core.database.db.rows(sql`select 1 from events where session_id = 'aborted'`)).toEqual([])
      // The relay stays healthy for the next client.
      expect((await fetch(`${relay.url}/_sl/health/simple`)).status).toBe(200)
    } finally {
      await relay.close()
    }
  })
})

for (const adapter of ['bun', 'node', 'elysia', 'deno', 'standalone'] as AdapterName[]) {
  test(`${adapter}: a client gone while the answer streams gives up core's answer and its connection`, async () => {
    const upstream = startEndlessUpstream()
    const relay = await startRelay(adapter, { upstream: upstream.url, prefix: '/_sl' })
    try {
      // A read body (no signal watched upstream) and a bodiless GET: only the answer ties them to the client.
      for (const init of [{ method: 'GET' }, { method: 'POST', body: '{}' }]) {
        const client = new AbortController()
        const res = await fetch(`${relay.url}/_sl/${init.method === 'GET' ? 'health' : 'api/ingestion/events'}`, { ...init, signal: client.signal })
        const reader = res.body!.getReader()
        await reader.read()
        client.abort()
      }
      await until(() => upstream.connections.length === 2 && upstream.connections.every((c) => c.closed))
    } finally {
      await relay.close()
      upstream.close()
    }
  })
}

for (const adapter of ['bun', 'node', 'node-middleware', 'elysia', 'deno', 'standalone'] as AdapterName[]) {
  test(`${adapter}: requests pipelined on one connection reach core one at a time: one write of 50 opens one connection to core, not 50`, async () => {
    // Each request forwarded at once held a connection to core (and a file descriptor) until core
    // answered or timeoutMs passed, the client's gone included: a few kilobytes sent once, many
    // connections to core, as many times as the client writes.
    const silent = startSilentUpstream()
    const relay = await startRelay(adapter, { upstream: silent.url, prefix: '/_sl', timeoutMs: 10_000 })
    const { hostname, port } = new URL(relay.url)
    const client = await Bun.connect({ hostname, port: Number(port), socket: { data() {} } })
    try {
      client.write('GET /_sl/health HTTP/1.1\r\nHost: shop.test\r\n\r\n'.repeat(50))
      await until(() => silent.connections.length >= 1)
      await Bun.sleep(300)
      expect(silent.connections.length).toBe(1)
    } finally {
      client.end()
      await relay.close()
      silent.close()
    }
  })
}

describe("Bun's idle timeout of the site's server does not cut short what timeoutMs allows", () => {
  // Bun.serve closes a connection silent for its idleTimeout (10 s by default, 30 s under Elysia's
  // listen), a pending answer included: core silent for longer than that but within timeoutMs left
  // the client with a closed connection instead of core's answer or the documented 504.
  test('bun and elysia, the server idle after 8 s: core silent for 11 s is 504 upstream_timeout at 11 s', async () => {
    const silent = startSilentUpstream()
    const options = { upstream: silent.url, prefix: '/_sl', timeoutMs: 11_000 }
    const bun = Bun.serve({ port: 0, hostname: '127.0.0.1', idleTimeout: 8, fetch: bunRelay(options) })
    const elysia = new Elysia().use(elysiaRelay(options)).listen({ port: 0, hostname: '127.0.0.1', idleTimeout: 8 })
    try {
      const ask = async (port: number) => {
        const { status, headers, text } = await rawRequest(`http://127.0.0.1:${port}`, 'GET /_sl/health HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n')
        return { status, retryAfter: headers['retry-after'], code: status ? JSON.parse(text).error.code : null }
      }
      const answers = await Promise.all([ask(bun.port!), ask(elysia.server!.port!)])
      const expected = { status: 504, retryAfter: '5', code: 'upstream_timeout' }
      expect(answers).toEqual([expected, expected])
    } finally {
      bun.stop(true)
      await elysia.stop(true)
      silent.close()
    }
  }, 20_000)
})

describe('options the relay cannot honour are refused when it is created, not met on every request', () => {
  test('a timeoutMs past what a timer holds (2^31 - 1 ms), none at all, or not a number', async () => {
    // The fetch client's timer fires after 1 ms for any delay past 2^31 - 1 ms (Infinity included):
    // an operator who meant "practically never" got 504 for every request. A string (an environment
    // variable passed as it is) made the socket client's deadlines never fire: no timeout at all.
    for (const timeoutMs of [2 ** 31, Infinity, 0, -1, NaN, '5000']) {
      expect(() => createRelay({ upstream: coreUrl, prefix: '/_sl', client: fetchClient(), timeoutMs: timeoutMs as number })).toThrow(TypeError)
    }
    const relay = createRelay({ upstream: coreUrl, prefix: '/_sl', client: fetchClient(), timeoutMs: 2 ** 31 - 1 })
    expect((await relay(new Request('http://shop.test/_sl/health/simple'))).status).toBe(200)
  })

  test('a maxBodyBytes that is not a whole number of bytes, and a keyInBody that is not one of the three', () => {
    // NaN refused every body with 413; a keyInBody of false or "none" silently moved the key ("auto").
    for (const maxBodyBytes of [NaN, -1, 1.5, Infinity, '1000']) {
      expect(() => createRelay({ upstream: coreUrl, prefix: '/_sl', maxBodyBytes: maxBodyBytes as number })).toThrow(TypeError)
    }
    for (const keyInBody of [false, 'none', 'Never']) {
      expect(() => createRelay({ upstream: coreUrl, prefix: '/_sl', keyInBody: keyInBody as never })).toThrow(TypeError)
    }
    expect(() => createRelay({ upstream: coreUrl, prefix: '/_sl', maxBodyBytes: 0, keyInBody: 'never' })).not.toThrow()
  })
})
