import { describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { createRelay } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'

// A kept-alive connection core closes just as a request arrives (core's idle timeout crossing it on
// the wire): core never had that request. A body the relay holds whole (bytes, or none) goes out once
// more on a fresh connection. A streamed body (over 64 KB, chunked or of declared size) could be
// neither written whole nor again once part of it was written, so it never takes a kept-alive
// connection: it goes on a fresh one from the start.

type Conn = { index: number; buffered: Buffer; requests: number; expecting: { head: string; length: number; chunked: Buffer[] | null } | null }
type Received = { connection: number; head: string; body: Buffer }

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'

/**
 * An upstream that reads whole requests (Content-Length or chunked bodies) and records each with its body.
 * The first request on each connection is answered; any later one finds the connection closed
 * (`how`) as its head arrives, before any of its body is read.
 */
function startClosingReused(how: 'end' | 'terminate') {
  const received: Received[] = []
  const heads: number[] = []
  let connections = 0
  const listener = Bun.listen<Conn>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: connections++, buffered: Buffer.alloc(0), requests: 0, expecting: null }
      },
      data(socket, chunk) {
        const conn = socket.data
        conn.buffered = Buffer.concat([conn.buffered, chunk])
        for (;;) {
          if (!conn.expecting) {
            const end = conn.buffered.indexOf('\r\n\r\n')
            if (end === -1) return
            const head = conn.buffered.subarray(0, end).toString('latin1')
            conn.buffered = conn.buffered.subarray(end + 4)
            heads.push(conn.index)
            if (++conn.requests > 1) return void socket[how]()
            conn.expecting = { head, length: Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0), chunked: /\r\ntransfer-encoding: chunked/i.test(head) ? [] : null }
          }
          const { chunked } = conn.expecting
          if (chunked) {
            // Chunks without extensions or trailers, as the relay writes them.
            const line = conn.buffered.indexOf('\r\n')
            if (line === -1) return
            const size = parseInt(conn.buffered.subarray(0, line).toString('latin1'), 16)
            if (conn.buffered.byteLength < line + 2 + size + 2) return
            chunked.push(Buffer.from(conn.buffered.subarray(line + 2, line + 2 + size)))
            conn.buffered = conn.buffered.subarray(line + 2 + size + 2)
            if (size > 0) continue
            received.push({ connection: conn.index, head: conn.expecting.head, body: Buffer.concat(chunked) })
          } else {
            if (conn.buffered.byteLength < conn.expecting.length) return
            received.push({ connection: conn.index, head: conn.expecting.head, body: Buffer.from(conn.buffered.subarray(0, conn.expecting.length)) })
            conn.buffered = conn.buffered.subarray(conn.expecting.length)
          }
          conn.expecting = null
          socket.write(OK)
        }
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, received, heads, connections: () => connections, close: () => listener.stop(true) }
}

const relayTo = (upstream: string, timeoutMs = 2000) => createRelay({ upstream, prefix: '/_sl', client: socketClient(), timeoutMs })
const get = (relay: ReturnType<typeof relayTo>) => relay(new Request('http://shop.test/_sl/health'))

const SIZE = 1024 * 1024
const PIECE = 16 * 1024
function bodyBytes(): Buffer {
  const bytes = Buffer.alloc(SIZE)
  for (let i = 0; i < SIZE; i++) bytes[i] = 0x61 + ((i * 7 + (i >> 10)) % 26)
  return bytes
}

/**
 * The client's body as a browser's upload reaches the relay: `first` bytes with the head, the rest
 * after `waitMs` (still on the wire), 16 KB a read. Records how far it was read and whether it was cancelled.
 */
function clientBody(bytes: Buffer, first: number, waitMs: number) {
  const state = { pulled: 0, cancelled: false }
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (state.pulled === first) await Bun.sleep(waitMs)
        if (state.pulled >= bytes.byteLength) return controller.close()
        const size = state.pulled < first ? Math.min(first - state.pulled, 64 * 1024) : PIECE
        const piece = new Uint8Array(bytes.subarray(state.pulled, state.pulled + size))
        state.pulled += piece.byteLength
        controller.enqueue(piece)
      },
      cancel() {
        state.cancelled = true
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, state }
}

/** Core got the body once, whole and chunked, on the second connection (the first being the kept-alive one); the client's body was not cancelled. */
function expectSentWholeOnFresh(upstream: ReturnType<typeof startClosingReused>, bytes: Buffer, state: { cancelled: boolean }) {
  expect(upstream.heads).toEqual([0, 1])
  expect(upstream.received[1].head).toContain('transfer-encoding: chunked')
  expect(Buffer.compare(upstream.received[1].body, bytes)).toBe(0)
  expect(state.cancelled).toBe(false)
}

const postStream = (relay: ReturnType<typeof relayTo>, stream: ReadableStream<Uint8Array>, signal?: AbortSignal) =>
  relay(new Request('http://shop.test/_sl/api/ingestion/replay', { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': 'application/octet-stream', 'content-length': String(SIZE) }, signal } as RequestInit))

describe('socket client: a streamed body never takes a kept-alive connection core may be closing', () => {
  for (const how of ['end', 'terminate'] as const) {
    for (const [what, first] of [
      ['none of it with the head', 0],
      ['16 KB of it with the head', PIECE],
      ['128 KB of it with the head, more than a resend could write again', 128 * 1024],
    ] as const) {
      test(`(${how}) a 1 MB body of declared size, ${what}: sent on a fresh connection, 200, core gets it whole exactly once`, async () => {
        const upstream = startClosingReused(how)
        try {
          const relay = relayTo(upstream.url)
          expect(await (await get(relay)).text()).toBe('ok')
          const bytes = bodyBytes()
          const { stream, state } = clientBody(bytes, first, 100)
          const res = await postStream(relay, stream)
          expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
          // Connection 0 (kept alive, then closed by core) never saw the POST: it went to connection 1.
          expect(upstream.heads).toEqual([0, 1])
          expect(upstream.received.map((r) => r.connection)).toEqual([0, 1])
          const sent = upstream.received[1]
          expect(sent.head).toStartWith('POST /api/ingestion/replay HTTP/1.1')
          expect(sent.head).toContain(`content-length: ${SIZE}`)
          expect(Buffer.compare(sent.body, bytes)).toBe(0)
          expect({ pulled: state.pulled, cancelled: state.cancelled }).toEqual({ pulled: SIZE, cancelled: false })
          // Nothing more came after the body: no duplicate piece read as the start of another request.
          await Bun.sleep(50)
          expect(upstream.heads).toEqual([0, 1])
        } finally {
          upstream.close()
        }
      })
    }

    test(`(${how}) a body the relay read whole still takes the kept-alive connection, and is resent once on a fresh one when core closed it: 200`, async () => {
      const upstream = startClosingReused(how)
      try {
        const relay = relayTo(upstream.url)
        expect(await (await get(relay)).text()).toBe('ok')
        const res = await relay(new Request('http://shop.test/_sl/api/ingestion/logs', { method: 'POST', body: '{"logs":[]}', headers: { 'content-type': 'application/json' } }))
        expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
        expect(upstream.heads).toEqual([0, 0, 1])
        expect(upstream.received.map((r) => [r.connection, r.body.toString()])).toEqual([
          [0, ''],
          [1, '{"logs":[]}'],
        ])
      } finally {
        upstream.close()
      }
    })
  }

  test('a queued body of declared size is handed no released kept-alive connection: it takes a fresh one in its place', async () => {
    const upstream = startClosingReused('end')
    try {
      const relay = createRelay({ upstream: upstream.url, prefix: '/_sl', client: socketClient({ maxConnections: 1 }), timeoutMs: 2000 })
      const bytes = bodyBytes()
      const { stream } = clientBody(bytes, 128 * 1024, 50)
      // The GET holds the one connection; the POST waits for it, and gets its slot once it is released.
      const [answer, res] = await Promise.all([get(relay), postStream(relay, stream)])
      expect(await answer.text()).toBe('ok')
      expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
      expect(upstream.heads).toEqual([0, 1])
      expect(Buffer.compare(upstream.received[1].body, bytes)).toBe(0)
    } finally {
      upstream.close()
    }
  })

  test('a chunked body (undeclared size) never takes the kept-alive connection: sent whole on a fresh one, each piece framed once', async () => {
    // Through the client itself, a body streamed chunked from its start. Through the relay one has
    // been read past 64 KB before core is contacted (see the test below).
    const upstream = startClosingReused('end')
    try {
      const send = socketClient()
      const request = (body: ReadableStream<Uint8Array> | null) => ({ origin: upstream.url, target: '/api/ingestion/replay', method: 'POST', headers: [], body, contentLength: null, timeoutMs: 2000 })
      expect(await (await send(request(null))).text()).toBe('ok')
      const bytes = bodyBytes()
      const { stream, state } = clientBody(bytes, PIECE, 100)
      const res = await send(request(stream))
      expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
      expectSentWholeOnFresh(upstream, bytes, state)
    } finally {
      upstream.close()
    }
  })

  for (const how of ['end', 'terminate'] as const) {
    test(`(${how}) through the relay, a 1 MB body of undeclared size goes on a fresh connection, never the kept-alive one core closes: 200, core gets it whole once`, async () => {
      const upstream = startClosingReused(how)
      try {
        const relay = relayTo(upstream.url)
        expect(await (await get(relay)).text()).toBe('ok')
        const bytes = bodyBytes()
        // 128 KB at once (the relay reads past 64 KB to learn the body is large), the rest 50 ms later.
        const { stream, state } = clientBody(bytes, 128 * 1024, 50)
        const res = await relay(new Request('http://shop.test/_sl/api/ingestion/replay', { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': 'application/octet-stream' } } as RequestInit))
        expect({ status: res.status, text: await res.text() }).toEqual({ status: 200, text: 'ok' })
        expectSentWholeOnFresh(upstream, bytes, state)
      } finally {
        upstream.close()
      }
    })
  }

  test('the client going away while its body waits: 499, the body is cancelled and core gets no whole request', async () => {
    const upstream = startClosingReused('end')
    try {
      const relay = relayTo(upstream.url)
      expect(await (await get(relay)).text()).toBe('ok')
      const { stream, state } = clientBody(bodyBytes(), 0, 400)
      const abort = new AbortController()
      setTimeout(() => abort.abort(), 150)
      const started = Date.now()
      const res = await postStream(relay, stream, abort.signal)
      expect(res.status).toBe(499)
      expect(Date.now() - started).toBeLessThan(350)
      await Bun.sleep(400)
      expect(state.cancelled).toBe(true)
      expect(upstream.received.length).toBe(1)
    } finally {
      upstream.close()
    }
  })

  test('core gone while a connection was kept alive: the fresh connection for a streamed body is refused, 502 at once, nothing of the body read', async () => {
    const upstream = startClosingReused('end')
    try {
      const relay = relayTo(upstream.url)
      expect(await (await get(relay)).text()).toBe('ok')
      upstream.close()
      const { stream, state } = clientBody(bodyBytes(), PIECE, 100)
      const started = Date.now()
      const res = await postStream(relay, stream)
      expect(res.status).toBe(502)
      expect(Date.now() - started).toBeLessThan(500)
      expect(state.pulled).toBe(0)
    } finally {
      upstream.close()
    }
  })

  test('timeoutMs applies to a streamed body: a client body that stalls past it is 504 and cancelled', async () => {
    const upstream = startClosingReused('end')
    try {
      const relay = relayTo(upstream.url, 200)
      expect(await (await get(relay)).text()).toBe('ok')
      const { stream, state } = clientBody(bodyBytes(), 0, 1000)
      const started = Date.now()
      const res = await postStream(relay, stream)
      expect(res.status).toBe(504)
      expect(Date.now() - started).toBeLessThan(700)
      await Bun.sleep(1000)
      expect(state.cancelled).toBe(true)
      expect(upstream.received.length).toBe(1)
    } finally {
      upstream.close()
    }
  })
})
