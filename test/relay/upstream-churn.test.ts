import { describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { createRelay } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'

// The socket client under churn: what it opens, it closes. Open sockets are counted as this process's
// file descriptors (core runs in it too), with no connection kept idle (maxIdle 0) so that every
// socket still open after the load settles would be one leaked.

const openFds = () => readdirSync('/proc/self/fd').length

/** Polls until the descriptors are back to `before`, or 3 s pass; returns the last count. */
async function settledFds(before: number): Promise<number> {
  let now = openFds()
  for (let waited = 0; now !== before && waited < 3000; waited += 50) {
    await Bun.sleep(50)
    now = openFds()
  }
  return now
}

describe('socket client: no connection outlives its exchange', () => {
  test('10,000 requests, clients going away at random (before sending, mid-upload, mid-answer): every descriptor is closed after', async () => {
    const large = Buffer.alloc(300_000, 0x61)
    const core = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        if (request.method === 'POST') {
          await request.arrayBuffer().catch(() => {})
          return Response.json({ success: true })
        }
        return new Response(new URL(request.url).pathname === '/health/simple' ? large : 'ok')
      },
    })
    try {
      const relay = createRelay({ upstream: `http://127.0.0.1:${core.port}`, prefix: '/_sl', client: socketClient({ maxIdle: 0 }), timeoutMs: 3000 })
      await (await relay(new Request('http://shop.test/_sl/health'))).text()
      await Bun.sleep(100)
      const before = openFds()
      let seed = 7
      const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
      const statuses = new Map<string, number>()
      const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1)
      const one = async () => {
        const kind = Math.floor(random() * 5)
        const client = new AbortController()
        if (kind === 0) {
          const res = await relay(new Request('http://shop.test/_sl/health'))
          count(`get ${res.status}`)
          await res.text()
        } else if (kind === 1) {
          // Reads the first piece of a large answer, then goes away.
          const res = await relay(new Request('http://shop.test/_sl/health/simple'))
          count(`get-large ${res.status}`)
          const reader = res.body!.getReader()
          await reader.read()
          await reader.cancel()
        } else if (kind === 2 || kind === 3) {
          // A streamed upload (declared over 64 KB), gone before it starts or somewhere in it.
          let pieces = 0
          const body = new ReadableStream<Uint8Array>({
            async pull(controller) {
              // 30 ms at least: longer than any client waits before going away.
              await Bun.sleep(3)
              if (pieces++ === 10) return controller.close()
              controller.enqueue(new Uint8Array(11_000).fill(0x20))
            },
          })
          if (kind === 3) client.abort()
          else setTimeout(() => client.abort(), random() * 15)
          const init = { method: 'POST', body, signal: client.signal, headers: { 'content-length': '110000' }, duplex: 'half' }
          const res = await relay(new Request('http://shop.test/_sl/api/ingestion/events', init as RequestInit))
          count(`upload ${res.status}`)
          await res.text().catch(() => {})
        } else {
          setTimeout(() => client.abort(), random() * 3)
          const res = await relay(new Request('http://shop.test/_sl/api/ingestion/events', { method: 'POST', body: '{}', signal: client.signal }))
          count(`post ${res.status}`)
          await res.text()
        }
      }
      for (let batch = 0; batch < 100; batch++) await Promise.all(Array.from({ length: 100 }, one))
      expect(await settledFds(before)).toBe(before)
      // Every kind happened, and the relay answered each (499 for a client gone mid-upload).
      expect([...statuses.keys()].sort()).toEqual(['get 200', 'get-large 200', 'post 200', 'upload 499'])
    } finally {
      core.stop(true)
    }
  }, 60_000)

  test('a core that accepts but never answers: each request is 504 at the timeout, and its connection is closed', async () => {
    let open = 0
    const silent = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        open: () => void open++,
        close: () => void open--,
        data() {},
      },
    })
    try {
      const relay = createRelay({ upstream: `http://127.0.0.1:${silent.port}`, prefix: '/_sl', client: socketClient(), timeoutMs: 300 })
      const before = openFds()
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => relay(new Request(`http://shop.test/_sl/${i % 2 ? 'health' : 'api/ingestion/events'}`, i % 2 ? {} : { method: 'POST', body: '{}' }))))
      expect(new Set(answers.map((res) => res.status))).toEqual(new Set([504]))
      expect(await settledFds(before)).toBe(before)
      expect(open).toBe(0)
    } finally {
      silent.stop(true)
    }
  })
})
