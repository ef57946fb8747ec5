import { describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { createRelay } from '@sightline/relay'
import { fetchClient } from '@sightline/relay/upstream/fetch'
import { startRelay, startScripted } from './helpers'

// The fetch client (the Node and Deno adapters' and createRelay's default) under the same bound as
// the socket client (upstream-limits.test.ts): at most `maxConnections` exchanges in flight to core,
// each holding a connection until its answer's body ends; the rest wait in a FIFO queue of at most
// `maxQueued`, and past it, or past timeoutMs in it, the relay answers 503 itself without contacting
// core. The upstream is a real TCP server that counts connections and requests in flight.

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

// No client given: the relay's own fetch client, made with the limits.
const relayTo = (upstream: string, maxConnections: number, maxQueued: number, timeoutMs = 2000) => createRelay({ upstream, prefix: '/_sl', maxConnections, maxQueued, timeoutMs })

const until = async (condition: () => boolean) => {
  for (let waited = 0; !condition() && waited < 2000; waited += 10) await Bun.sleep(10)
}

describe('fetch client: at most maxConnections exchanges in flight to core, the rest queued', () => {
  test('50 clients at once through the Node adapter (maxConnections 4): all answered, never more than 4 requests or connections at core', async () => {
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
    const relay = await startRelay('node', { upstream: upstream.url, prefix: '/_sl', maxConnections: 4, maxQueued: 100 })
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${relay.url}/_sl/health`).then(async (res) => `${res.status} ${await res.text()}`)))
      expect(new Set(answers)).toEqual(new Set(['200 ok']))
      expect(upstream.connections.length).toBe(50)
      expect(most).toBe(4)
      expect(upstream.open.filter(Boolean).length).toBeLessThanOrEqual(4)
    } finally {
      await relay.close()
      upstream.close()
    }
  })

  for (const adapter of ['node', 'deno'] as const) {
    test(`the ${adapter === 'node' ? 'Node' : 'Deno'} adapter past the queue: 503 overloaded with Retry-After, core never contacted`, async () => {
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

  test('past the queue: 503 at once, core never contacted; the queued are answered in order', async () => {
    const upstream = startHolding()
    try {
      const relay = relayTo(upstream.url, 2, 3)
      const order: number[] = []
      const pending = Array.from({ length: 10 }, (_, i) =>
        relay(new Request(`http://shop.test/_sl/health?n=${i}`)).then(async (res) => {
          order.push(i)
          return { status: res.status, body: res.status === 503 ? await res.json() : await res.text() }
        }),
      )
      await until(() => order.length === 5 && upstream.held.length === 2)
      expect(order).toEqual([5, 6, 7, 8, 9])
      for (const refused of await Promise.all(pending.slice(5))) expect(refused.body.error.code).toBe('overloaded')
      expect(upstream.connections.length).toBe(2)
      upstream.release()
      for (const answered of await Promise.all(pending.slice(0, 5))) expect(answered).toEqual({ status: 200, body: 'ok' })
      expect(order.slice(5)).toEqual([0, 1, 2, 3, 4])
      expect(upstream.connections.length).toBe(5)
    } finally {
      upstream.close()
    }
  })

  test('waiting past timeoutMs: 503 overloaded (not 504), and core never had that request', async () => {
    // The one slot is busy for 600 ms with an answer that trickles (never silent for timeoutMs).
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

  test('a client that goes away while queued leaves the queue: 499 at once, its place is free, core never gets it', async () => {
    const upstream = startHolding()
    try {
      const relay = relayTo(upstream.url, 1, 1)
      const first = relay(new Request('http://shop.test/_sl/health'))
      await until(() => upstream.held.length === 1)
      const client = new AbortController()
      const gone = relay(new Request('http://shop.test/_sl/health?gone', { signal: client.signal }))
      await Bun.sleep(20)
      client.abort()
      expect((await gone).status).toBe(499)
      const third = relay(new Request('http://shop.test/_sl/health?third'))
      await Bun.sleep(20)
      upstream.release()
      // The first exchange ends once its answer's body is read: the third takes its slot then.
      expect(await (await first).text()).toBe('ok')
      expect(await (await third).text()).toBe('ok')
      expect(upstream.connections.length).toBe(2)
    } finally {
      upstream.close()
    }
  })

  for (const how of ['read to its end', 'cancelled'] as const) {
    test(`a streamed answer holds its slot until its body is ${how}: the next request waits until then`, async () => {
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
    expect(() => fetchClient({ maxConnections: 0 })).toThrow(TypeError)
    expect(() => fetchClient({ maxQueued: -1 })).toThrow(TypeError)
    expect(() => createRelay({ upstream: 'http://127.0.0.1:1', prefix: '/_sl', maxConnections: Number.NaN })).toThrow(TypeError)
  })
})
