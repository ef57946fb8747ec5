import { describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { createRelay } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { startRelay, startScripted } from './helpers'

// The bound on connections to core: a burst of clients shares at most `maxConnections` of them, the
// rest wait in a FIFO queue of at most `maxQueued`; past it, or past timeoutMs in it, the relay
// answers 503 itself and core is never contacted. The upstream is a real TCP server that counts the
// connections it is opened and holds each answer until the test lets it go.

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'

/** An upstream that holds every request until `release()`, and answers at once after it. */
function startHolding() {
  const held: Socket<unknown>[] = []
  let released = false
  const upstream = startScripted((_index, _head, socket) => {
    if (released) return [OK]
    held.push(socket as Socket<unknown>)
    return null
  })
  return {
    ...upstream,
    held,
    release() {
      released = true
      for (const socket of held.splice(0)) socket.write(OK)
    },
  }
}

const relayTo = (upstream: string, maxConnections: number, maxQueued: number, timeoutMs = 2000) =>
  createRelay({ upstream, prefix: '/_sl', client: socketClient({ maxConnections, maxQueued }), timeoutMs })

const until = async (condition: () => boolean) => {
  for (let waited = 0; !condition() && waited < 2000; waited += 10) await Bun.sleep(10)
}

describe('socket client: at most maxConnections to core, the rest queued', () => {
  test('50 clients at once through the Bun adapter (maxConnections 4): all answered, on 4 connections to core', async () => {
    let inFlight = 0
    let most = 0
    const upstream = startScripted((_index, _head, socket) => {
      most = Math.max(most, ++inFlight)
      setTimeout(() => {
        inFlight--
        socket.write(OK)
      }, 5)
      return null
    })
    const relay = await startRelay('bun', { upstream: upstream.url, prefix: '/_sl', maxConnections: 4, maxQueued: 100 })
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${relay.url}/_sl/health`).then(async (res) => `${res.status} ${await res.text()}`)))
      expect(new Set(answers)).toEqual(new Set(['200 ok']))
      expect(upstream.connections.length).toBe(50)
      expect(upstream.open.length).toBe(4)
      expect(most).toBe(4)
    } finally {
      await relay.close()
      upstream.close()
    }
  })

  test('past the queue: 503 overloaded in the error shape with Retry-After at once, core never contacted; the queued are answered in order', async () => {
    const upstream = startHolding()
    try {
      const relay = relayTo(upstream.url, 2, 3)
      const order: number[] = []
      const pending = Array.from({ length: 10 }, (_, i) =>
        relay(new Request(`http://shop.test/_sl/health?n=${i}`)).then(async (res) => {
          order.push(i)
          return { status: res.status, retryAfter: res.headers.get('retry-after'), body: res.status === 503 ? await res.json() : await res.text() }
        }),
      )
      await until(() => order.length === 5 && upstream.held.length === 2)
      // The last five found 2 connections busy and 3 waiting.
      expect(order).toEqual([5, 6, 7, 8, 9])
      for (const refused of await Promise.all(pending.slice(5))) {
        expect(refused.status).toBe(503)
        expect(refused.retryAfter).not.toBeNull()
        expect(refused.body).toEqual({ success: false, error: { code: 'overloaded', message: expect.any(String) } })
      }
      expect(upstream.connections.length).toBe(2)
      upstream.release()
      for (const answered of await Promise.all(pending.slice(0, 5))) expect(answered.status).toBe(200)
      expect(order.slice(5)).toEqual([0, 1, 2, 3, 4])
      expect(upstream.open.length).toBe(2)
      expect(upstream.connections.length).toBe(5)
    } finally {
      upstream.close()
    }
  })

  test('waiting past timeoutMs: 503 overloaded (not 504), and core never had that request', async () => {
    // The one connection is busy for 600 ms with an answer that trickles (never silent for timeoutMs).
    const trickle = ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', ...Array<string>(40).fill('1\r\na\r\n'), '0\r\n\r\n']
    const upstream = startScripted(() => trickle)
    try {
      const relay = relayTo(upstream.url, 1, 10, 300)
      const first = relay(new Request('http://shop.test/_sl/health'))
      await until(() => upstream.connections.length === 1)
      const started = performance.now()
      const second = await relay(new Request('http://shop.test/_sl/api/ingestion/logs', { method: 'POST', body: '{}' }))
      expect(second.status).toBe(503)
      expect((await second.json()).error.code).toBe('overloaded')
      expect(second.headers.get('retry-after')).not.toBeNull()
      expect(performance.now() - started).toBeGreaterThan(250)
      expect(await (await first).text()).toBe('a'.repeat(40))
      expect(upstream.connections.length).toBe(1)
    } finally {
      upstream.close()
    }
  })

  for (const [what, init] of [
    ['a GET', {}],
    ['a POST with a small body (read, not streamed)', { method: 'POST', body: '{"sessionId":"s"}' }],
  ] as const) {
    test(`${what} whose client goes away while queued leaves the queue: 499 at once, its place is free, core never gets it`, async () => {
      const upstream = startHolding()
      try {
        const relay = relayTo(upstream.url, 1, 1)
        const first = relay(new Request('http://shop.test/_sl/health'))
        await until(() => upstream.held.length === 1)
        const client = new AbortController()
        const gone = relay(new Request('http://shop.test/_sl/api/ingestion/logs', { ...init, method: init.method ?? 'GET', signal: client.signal }))
        await Bun.sleep(20)
        client.abort()
        expect((await gone).status).toBe(499)
        // The queue (of one) has room again: the next request waits rather than being refused.
        const third = relay(new Request('http://shop.test/_sl/health?third'))
        await Bun.sleep(20)
        upstream.release()
        expect((await first).status).toBe(200)
        expect((await third).status).toBe(200)
        expect(upstream.connections.length).toBe(2)
      } finally {
        upstream.close()
      }
    })
  }

  test('limits the relay could not honour are refused when it is made', () => {
    expect(() => socketClient({ maxConnections: 0 })).toThrow(TypeError)
    expect(() => socketClient({ maxQueued: -1 })).toThrow(TypeError)
    expect(() => socketClient({ maxConnections: Number.NaN })).toThrow(TypeError)
  })
})
