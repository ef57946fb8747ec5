import { describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { createRelay } from '@sightline/relay'
import { fetchClient } from '@sightline/relay/upstream/fetch'
import { socketClient } from '@sightline/relay/upstream/socket'
import type { SlotLimits } from '@sightline/relay/upstream/slots'
import { type AdapterName, startRelay, startScripted } from './helpers'

// The bound on connections to core, on both clients: a burst of clients shares at most
// `maxConnections` of them (the fetch client: exchanges in flight, each holding a connection until
// its answer's body ends), the rest wait in a FIFO queue of at most `maxQueued`; past it, or past
// timeoutMs in it, the relay answers 503 itself and core is never contacted. The upstream is a real
// TCP server that counts the connections it is opened and holds each answer until the test lets it go.

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'

/** An upstream that holds every request until `release()`, and answers at once after it; `arrived` lists each request's `?n=` in the order it came. */
function startHolding() {
  const held: Socket<unknown>[] = []
  const arrived: number[] = []
  let released = false
  const upstream = startScripted((_index, head, socket) => {
    arrived.push(Number(/[?&]n=(\d+)/.exec(head)?.[1]))
    if (released) return [OK]
    held.push(socket as Socket<unknown>)
    return null
  })
  return {
    ...upstream,
    held,
    arrived,
    release() {
      released = true
      for (const socket of held.splice(0)) socket.write(OK)
    },
  }
}

const until = async (condition: () => boolean) => {
  for (let waited = 0; !condition() && waited < 2000; waited += 10) await Bun.sleep(10)
}

interface ClientUnderTest {
  makeClient: (limits: SlotLimits) => unknown
  /** The relay options that bound this client to the limits. */
  withLimits: (limits: SlotLimits) => object
  /** The adapters that mount this client, with their names in test titles. */
  adapters: [AdapterName, string][]
}

const CLIENTS: Record<'socket' | 'fetch', ClientUnderTest> = {
  // Made with the limits and passed in, as the Bun and Elysia adapters do.
  socket: { makeClient: socketClient, withLimits: (limits) => ({ client: socketClient(limits) }), adapters: [['bun', 'Bun'], ['standalone', 'standalone']] },
  // No client given: the relay's own fetch client, made with the limits (the Node and Deno adapters').
  fetch: {
    makeClient: fetchClient,
    withLimits: (limits) => limits,
    adapters: [
      ['node', 'Node'],
      ['deno', 'Deno'],
    ],
  },
}

for (const [clientName, { makeClient, withLimits, adapters }] of Object.entries(CLIENTS)) {
  const relayTo = (upstream: string, maxConnections: number, maxQueued: number, timeoutMs = 2000) =>
    createRelay({ upstream, prefix: '/_sl', timeoutMs, ...withLimits({ maxConnections, maxQueued }) })

  describe(`${clientName} client: at most maxConnections to core, the rest queued`, () => {
    const [firstAdapter, firstAdapterName] = adapters[0]
    test(`50 clients at once through the ${firstAdapterName} adapter (maxConnections 4): all answered, on 4 connections to core, never more than 4 requests at it`, async () => {
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
      const relay = await startRelay(firstAdapter, { upstream: upstream.url, prefix: '/_sl', maxConnections: 4, maxQueued: 100 })
      try {
        const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${relay.url}/_sl/health`).then(async (res) => `${res.status} ${await res.text()}`)))
        expect(new Set(answers)).toEqual(new Set(['200 ok']))
        expect(upstream.connections.length).toBe(50)
        expect(upstream.open.length).toBe(4)
        expect(upstream.open.filter(Boolean).length).toBeLessThanOrEqual(4)
        expect(most).toBe(4)
      } finally {
        await relay.close()
        upstream.close()
      }
    })

    for (const [adapter, adapterName] of adapters) {
      test(`the ${adapterName} adapter past the queue: 503 overloaded with Retry-After, core never contacted`, async () => {
        const upstream = startHolding()
        const relay = await startRelay(adapter, { upstream: upstream.url, prefix: '/_sl', maxConnections: 1, maxQueued: 1, timeoutMs: 2000 })
        try {
          const first = fetch(`${relay.url}/_sl/health?n=1`)
          await until(() => upstream.held.length === 1)
          const second = fetch(`${relay.url}/_sl/health?n=2`)
          await Bun.sleep(30)
          const third = await fetch(`${relay.url}/_sl/health?n=3`)
          expect(third.status).toBe(503)
          expect(third.headers.get('retry-after')).not.toBeNull()
          expect(await third.json()).toEqual({ success: false, error: { code: 'overloaded', message: expect.any(String) } })
          expect(upstream.connections.length).toBe(1)
          upstream.release()
          expect((await first).status).toBe(200)
          expect((await second).status).toBe(200)
          expect(upstream.connections.length).toBe(2)
        } finally {
          await relay.close()
          upstream.close()
        }
      })
    }

    test('past the queue: 503 overloaded in the error shape with Retry-After at once, core never contacted; the queued reach core in order', async () => {
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
        for (const answered of await Promise.all(pending.slice(0, 5))) expect(answered).toEqual({ status: 200, retryAfter: null, body: 'ok' })
        // The two held went first, in either order (they run at once); the queue is taken first in,
        // first out. Answers can finish in another order: the first request queued can get its
        // connection, and its answer, while the second held answer is still on its way to its client.
        expect({ held: upstream.arrived.slice(0, 2).toSorted(), queued: upstream.arrived.slice(2) }).toEqual({ held: [0, 1], queued: [2, 3, 4] })
        expect(order.slice(5).toSorted()).toEqual([0, 1, 2, 3, 4])
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
          // The first exchange ends once its answer's body is read: the third takes its place then.
          const firstAnswer = await first
          expect(firstAnswer.status).toBe(200)
          expect(await firstAnswer.text()).toBe('ok')
          const thirdAnswer = await third
          expect(thirdAnswer.status).toBe(200)
          expect(await thirdAnswer.text()).toBe('ok')
          expect(upstream.connections.length).toBe(2)
        } finally {
          upstream.close()
        }
      })
    }

    for (const how of ['read to its end', 'cancelled'] as const) {
      test(`a streamed answer holds its place until its body is ${how}: the next request waits until then`, async () => {
        // The first answer's head and a first piece at once; its last piece only when the test says.
        let finish: (() => void) | undefined
        const upstream = startScripted((index, _head, socket) => {
          if (index > 0) return [OK]
          socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n')
          finish = () => socket.write('1\r\nb\r\n0\r\n\r\n')
          return null
        })
        try {
          const relay = relayTo(upstream.url, 1, 10)
          const first = await relay(new Request('http://shop.test/_sl/health'))
          expect(first.status).toBe(200)
          let secondDone = false
          const second = relay(new Request('http://shop.test/_sl/health?second')).then((res) => ((secondDone = true), res))
          await Bun.sleep(100)
          // The first exchange is not over while its body is: core has not been sent the second.
          expect(secondDone).toBe(false)
          expect(upstream.connections.length).toBe(1)
          if (how === 'cancelled') await first.body!.cancel()
          else {
            finish!()
            expect(await first.text()).toBe('ab')
          }
          expect(await (await second).text()).toBe('ok')
          expect(upstream.connections.length).toBe(2)
        } finally {
          upstream.close()
        }
      })
    }

    test('limits the relay could not honour are refused when it is made', () => {
      expect(() => makeClient({ maxConnections: 0 })).toThrow(TypeError)
      expect(() => makeClient({ maxQueued: -1 })).toThrow(TypeError)
      expect(() => makeClient({ maxConnections: Number.NaN })).toThrow(TypeError)
      expect(() => createRelay({ upstream: 'http://127.0.0.1:1', prefix: '/_sl', ...withLimits({ maxConnections: Number.NaN }) })).toThrow(TypeError)
    })
  })
}
