import { describe, expect, test } from 'bun:test'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { startRelay, startStallingUpstream, type AdapterName, type StalledFraming } from './helpers'

// Core slow in the middle of its answer: `timeoutMs` bounds each silence of core's while the relay
// waits on it, not only the wait for the answer's head. A client that reads slowly is its own pace.

const CLIENTS = { socket: socketClient, fetch: () => fetchClient() }
const FRAMINGS: StalledFraming[] = ['length', 'chunked']
const TIMEOUT_MS = 300

const until = async (condition: () => boolean, timeoutMs = 3000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(5)
  }
}

/** Reads a body to its end and says how it ended: "ended", "failed", or "hung" if neither within `limitMs`. */
async function drain(body: ReadableStream<Uint8Array>, limitMs = 3000): Promise<{ how: string; bytes: number }> {
  const reader = body.getReader()
  let bytes = 0
  const outcome = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return 'ended'
        bytes += value.byteLength
      }
    } catch {
      return 'failed'
    }
  })()
  const how = await Promise.race([outcome, Bun.sleep(limitMs).then(() => 'hung')])
  if (how === 'hung') reader.cancel().catch(() => {})
  return { how, bytes }
}

type Stalling = ReturnType<typeof startStallingUpstream>

/** The stalled connection is closed, and the next request is answered on another one. */
async function expectGivenUpAndNextFresh(upstream: Stalling, next: () => Promise<Response>) {
  await until(() => upstream.connections[0].closed)
  const res = await next()
  expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
  expect(upstream.connections[0].targets).toEqual(['/health'])
  expect(upstream.connections.slice(1).flatMap((c) => c.targets)).toEqual(['/health/simple'])
}

for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
  describe(`answers that stall, over ${clientName}`, () => {
    for (const framing of FRAMINGS) {
      test(`an answer that stalls mid-body (${framing}) fails after timeoutMs of silence; its connection is closed, the next request gets a fresh one`, async () => {
        const upstream = startStallingUpstream(framing)
        try {
          const relay = createRelay({ upstream: upstream.url, prefix: '/_sl', client: makeClient(), timeoutMs: TIMEOUT_MS })
          const started = Date.now()
          const res = await relay(new Request('http://shop.test/_sl/health'))
          expect(res.status).toBe(200)
          expect(await drain(res.body!)).toEqual({ how: 'failed', bytes: 100 })
          expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 10)
          expect(Date.now() - started).toBeLessThan(2000)
          await expectGivenUpAndNextFresh(upstream, () => relay(new Request('http://shop.test/_sl/health/simple')))
        } finally {
          upstream.close()
        }
      })
    }

    test('a slow reader of a 4 MB answer gets all of it, though it stops reading for longer than timeoutMs', async () => {
      const answer = new Uint8Array(4 * 1024 * 1024).fill(0x61)
      const upstream = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(answer) })
      try {
        const relay = createRelay({ upstream: `http://127.0.0.1:${upstream.port}`, prefix: '/_sl', client: makeClient(), timeoutMs: TIMEOUT_MS })
        const res = await relay(new Request('http://shop.test/_sl/health'))
        const reader = res.body!.getReader()
        let bytes = 0
        for (let reads = 0; ; reads++) {
          // Three stops of more than twice the timeout, the first once core is well into its answer.
          if (reads === 1 || reads === 3 || reads === 8) await Bun.sleep(2 * TIMEOUT_MS + 100)
          const { done, value } = await reader.read()
          if (done) break
          bytes += value.byteLength
        }
        expect(bytes).toBe(answer.byteLength)
      } finally {
        upstream.stop(true)
      }
    })
  })
}

describe('interim answers, over socket', () => {
  /** An upstream that sends `interim` after `delays[0]` ms, then the answer after `delays[1]` more (never, if absent). */
  function startInterim(interim: string, delays: number[]) {
    const listener = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        async data(socket) {
          await Bun.sleep(delays[0])
          socket.write(`HTTP/1.1 ${interim}\r\nlink: </_sl/t.js>; rel=preload; as=script\r\n\r\n`)
          if (delays.length < 2) return
          await Bun.sleep(delays[1])
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok')
        },
      },
    })
    return { url: `http://127.0.0.1:${listener.port}`, close: () => listener.stop(true) }
  }

  for (const interim of ['100 Continue', '103 Early Hints']) {
    test(`a ${interim} restarts the wait: core has timeoutMs again after it, and no more`, async () => {
      // 500 ms each way: the answer comes 600 ms after the request, but only 300 ms after the interim one.
      const answered = startInterim(interim, [300, 300])
      const silent = startInterim(interim, [100])
      try {
        const started = Date.now()
        const res = await createRelay({ upstream: answered.url, prefix: '/_sl', client: socketClient(), timeoutMs: 500 })(new Request('http://shop.test/_sl/health'))
        expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
        expect(Date.now() - started).toBeGreaterThanOrEqual(590)
        // Silent after its interim answer: 504 once timeoutMs has passed since that answer.
        const again = Date.now()
        const late = await createRelay({ upstream: silent.url, prefix: '/_sl', client: socketClient(), timeoutMs: 500 })(new Request('http://shop.test/_sl/health'))
        expect(late.status).toBe(504)
        expect(Date.now() - again).toBeGreaterThanOrEqual(590)
        expect(Date.now() - again).toBeLessThan(2000)
      } finally {
        answered.close()
        silent.close()
      }
    })
  }
})

for (const adapter of ['bun', 'elysia', 'deno', 'node', 'standalone'] as AdapterName[]) {
  for (const framing of FRAMINGS) {
    test(`${adapter}: a client whose answer stalls mid-body (${framing}) sees it fail after timeoutMs; core's connection is closed, the next request gets a fresh one`, async () => {
      const upstream = startStallingUpstream(framing)
      const relay = await startRelay(adapter, { upstream: upstream.url, prefix: '/_sl', timeoutMs: TIMEOUT_MS })
      try {
        const started = Date.now()
        const res = await fetch(`${relay.url}/_sl/health`)
        expect(res.status).toBe(200)
        expect(await drain(res.body!)).toEqual({ how: 'failed', bytes: 100 })
        expect(Date.now() - started).toBeLessThan(2000)
        await expectGivenUpAndNextFresh(upstream, () => fetch(`${relay.url}/_sl/health/simple`))
      } finally {
        await relay.close()
        upstream.close()
      }
    })
  }
}
