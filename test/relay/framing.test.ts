import { describe, expect, test } from 'bun:test'
import { createRelay } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'

// The pooled socket client against an upstream that writes exact bytes, in pieces that arrive as
// separate TCP reads: what core's answer looks like on the wire must not decide whether the
// connection that carried it serves the next request.

interface Scripted {
  url: string
  /** The upstream port of the relay's connection, one entry per request received. */
  connections: number[]
  /** Raw bytes received on each connection, in order. */
  received: string[]
  close(): void
}

/**
 * An upstream that answers each request (head without a body) with `answerFor(index)`: a list of
 * pieces, written 15 ms apart so that each is its own read on the relay's side.
 */
function startScripted(answerFor: (index: number) => string[]): Scripted {
  const connections: number[] = []
  const received: string[] = []
  let count = 0
  const listener = Bun.listen<{ index: number; buffered: string }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: received.push('') - 1, buffered: '' }
      },
      async data(socket, chunk) {
        const text = Buffer.from(chunk).toString('latin1')
        received[socket.data.index] += text
        socket.data.buffered += text
        while (socket.data.buffered.includes('\r\n\r\n')) {
          socket.data.buffered = socket.data.buffered.slice(socket.data.buffered.indexOf('\r\n\r\n') + 4)
          connections.push(socket.remotePort)
          const pieces = answerFor(count++)
          for (const [i, piece] of pieces.entries()) {
            if (i > 0) await Bun.sleep(15)
            socket.write(piece)
          }
        }
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, connections, received, close: () => listener.stop(true) }
}

const relayTo = (upstream: string) => createRelay({ upstream, prefix: '/_sl', client: socketClient(), timeoutMs: 5000 })
const get = (relay: ReturnType<typeof relayTo>) => relay(new Request('http://shop.test/_sl/health'))

/** Every way of cutting `answer` in two, plus one byte at a time. */
function cuts(answer: string): string[][] {
  const ways = [[answer], answer.split('')]
  for (let at = 1; at < answer.length; at++) ways.push([answer.slice(0, at), answer.slice(at)])
  return ways
}

describe('socket client: the connection serves the next request whatever pieces the answer came in', () => {
  const answers = {
    'Content-Length': ['HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world', 'hello world'],
    chunked: ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n', 'hello world'],
    'interim 100 then chunked': ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n', 'hello world'],
    '204': ['HTTP/1.1 204 No Content\r\n\r\n', ''],
  }
  for (const [name, [answer, body]] of Object.entries(answers)) {
    test(`${name}: each cut answered in full, then the next request on the same connection at once`, async () => {
      const ways = cuts(answer)
      const FOLLOW_UP = 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext'
      // Even requests get the cut answer, odd ones a plain answer that must come back on the same connection.
      const upstream = startScripted((index) => (index % 2 === 0 ? ways[index / 2] : [FOLLOW_UP]))
      try {
        const relay = relayTo(upstream.url)
        for (const way of ways) {
          const first = await get(relay)
          expect({ way, status: first.status, body: await first.text() }).toEqual({ way, status: name === '204' ? 204 : 200, body })
          const started = Date.now()
          const next = await get(relay)
          expect({ way, status: next.status, body: await next.text() }).toEqual({ way, status: 200, body: 'next' })
          expect(Date.now() - started).toBeLessThan(500)
        }
        expect(new Set(upstream.connections).size).toBe(1)
      } finally {
        upstream.close()
      }
    })
  }
})

describe('socket client: a streamed body is sent as long as its Content-Length says, never longer', () => {
  /** An upstream that keeps what arrives on each connection and never answers. */
  function startRecorder() {
    const received: { text: string; closed: boolean }[] = []
    const listener = Bun.listen<{ index: number }>({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        open: (socket) => void (socket.data = { index: received.push({ text: '', closed: false }) - 1 }),
        data: (socket, chunk) => void (received[socket.data.index].text += Buffer.from(chunk).toString('latin1')),
        close: (socket) => void (received[socket.data.index].closed = true),
      },
    })
    return { url: `http://127.0.0.1:${listener.port}`, received, close: () => listener.stop(true) }
  }

  // What a handler may be given when something before the relay rewrote the body and kept the
  // header: the relay is past 64 KB, so it streams the body under the client's declared length.
  const declared = 70_000
  const SMUGGLED = 'POST /api/internal/scan-findings HTTP/1.1\r\nHost: core\r\nContent-Length: 2\r\n\r\n{}'
  const bodyOf = (...pieces: (Uint8Array | string)[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(typeof piece === 'string' ? new TextEncoder().encode(piece) : piece)
        controller.close()
      },
    })
  const post = (relay: ReturnType<typeof relayTo>, body: ReadableStream<Uint8Array>) =>
    relay(new Request('http://shop.test/_sl/api/ingestion/events', { method: 'POST', headers: { 'content-length': String(declared) }, body, duplex: 'half' } as RequestInit))

  test('bytes past it are never written: the exchange fails at once and its connection is closed', async () => {
    const upstream = startRecorder()
    try {
      const started = Date.now()
      const res = await post(relayTo(upstream.url), bodyOf(new Uint8Array(declared).fill(0x20), SMUGGLED))
      expect(res.status).toBeGreaterThanOrEqual(400)
      expect(Date.now() - started).toBeLessThan(1000)
      await Bun.sleep(50)
      expect(upstream.received.map((c) => c.text.includes('/api/internal/'))).toEqual([false])
      expect(upstream.received[0].closed).toBe(true)
    } finally {
      upstream.close()
    }
  })

  test('a body that ends short fails at once rather than leaving core waiting for the rest', async () => {
    const upstream = startRecorder()
    try {
      const started = Date.now()
      const res = await post(relayTo(upstream.url), bodyOf(new Uint8Array(declared - 1).fill(0x20)))
      expect(res.status).toBeGreaterThanOrEqual(400)
      expect(Date.now() - started).toBeLessThan(1000)
      await Bun.sleep(50)
      expect(upstream.received[0].closed).toBe(true)
    } finally {
      upstream.close()
    }
  })
})

describe('socket client: a request target that could split the head', () => {
  // The relay's own targets come from a parsed URL, which escapes whitespace; the client is exported,
  // though, and must refuse such a target whether or not a kept connection is at hand.
  for (const target of ['/health simple', '/health\r\nx-injected: 1', '/health\0']) {
    test(`${JSON.stringify(target)} is refused at once, and nothing reaches core`, async () => {
      const upstream = startScripted(() => ['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'])
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown) => void unhandled.push(reason)
      process.on('unhandledRejection', onUnhandled)
      try {
        const send = socketClient()
        const request = { origin: upstream.url, method: 'GET', headers: [] as [string, string][], body: null, contentLength: null, timeoutMs: 5000 }
        const started = Date.now()
        const failure = await send({ ...request, target }).then(() => null, (error) => error)
        expect(failure?.reason).toBe('refused')
        expect(Date.now() - started).toBeLessThan(1000)
        // With a kept connection in the pool, too: it stays usable.
        expect((await send({ ...request, target: '/health' })).status).toBe(200)
        expect((await send({ ...request, target }).then(() => null, (error) => error))?.reason).toBe('refused')
        expect((await send({ ...request, target: '/health' })).status).toBe(200)
        await Bun.sleep(50)
        expect(upstream.received.join('')).not.toContain('simple')
        expect(upstream.received.join('')).not.toContain('injected')
        expect(upstream.connections.length).toBe(2)
        expect(unhandled).toEqual([])
      } finally {
        process.off('unhandledRejection', onUnhandled)
        upstream.close()
      }
    })
  }
})
