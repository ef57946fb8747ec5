import type { Socket } from 'bun'
import { UpstreamError } from '../errors.ts'
import { isDroppedResponseHeader } from '../headers.ts'
import type { UpstreamClient, UpstreamRequest } from './types.ts'
import { ResponseParser, type ParsedHead } from './parser.ts'
import { exchangeClock, type TimedExchange } from './timing.ts'
import { chunkOf, LAST_CHUNK, requestHead, UNSAFE_TARGET } from './head.ts'
import { hold, streamedBody, undeclaredStream, type StreamedBody } from './streamed-body.ts'
import { checkLimits, Slots, type SlotLimits } from './slots.ts'

/**
 * A pooled HTTP/1.1 client on Bun's sockets, for the Bun and Elysia adapters. `fetch` works
 * everywhere, but on Bun each call crosses to its HTTP thread and back and allocates a Request; this
 * client writes the head and a small body in one `write`, parses the answer on the socket's own
 * callback and keeps the connection for the next request. Requests are not pipelined: one exchange
 * per connection at a time, at most `maxConnections` of them per upstream (see slots.ts).
 */

export interface SocketClientOptions extends SlotLimits {
  /** Idle connections kept per upstream (default 256). */
  maxIdle?: number
  /**
   * A connection idle longer than this is closed rather than reused (default 4 s, under the 5 s
   * keep-alive timeout of Node's server and the 10 s of Bun's), so a request is never written into
   * a connection the server is closing. Timed on a clock that only goes forward, as deadlines are.
   */
  maxIdleMs?: number
}

interface Exchange extends TimedExchange {
  request: UpstreamRequest
  resolve(response: Response): void
  reject(error: unknown): void
  /** The connection carrying it, once there is one. */
  conn: Connection | null
  answered: boolean
  /** The whole request is written. */
  sent: boolean
  onAbort: (() => void) | undefined
  /** The answer's body while it streams. */
  body: ReadableStreamDefaultController<Uint8Array> | null
  /** The client's body, when it streams: made once, it outlives a connection closed under it. */
  streamed: StreamedBody<Connection> | null
  /** Waiting for a connection (slots.ts). */
  queued: boolean
  /** The signal `onAbort` listens on. */
  watched: AbortSignal | null
}

interface Connection {
  pool: Pool
  socket: Socket<Connection> | null
  parser: ResponseParser
  exchange: Exchange | null
  /** Set when the socket has been used before: a failure before any answer may then be retried. */
  reused: boolean
  idleSince: number
  /** Bytes `write` did not take yet, and who waits for them to go. */
  backlog: Uint8Array | null
  drained: (() => void) | null
  /** Paused for backpressure: the client is behind on the answer's body. */
  paused: boolean
  closed: boolean
  /** Counted in its pool's slots until it closes, or hands its slot on (a resend's connection). */
  holdsSlot: boolean
}

interface Pool {
  hostname: string
  port: number
  tls: boolean
  host: string
  idle: Connection[]
  slots: Slots<Exchange>
}

export function socketClient({ maxIdle = 256, maxIdleMs = 4000, ...limits }: SocketClientOptions = {}): UpstreamClient {
  const { maxConnections, maxQueued } = checkLimits(limits)
  const pools = new Map<string, Pool>()
  const clock = exchangeClock<Exchange>(giveUp)

  const handlers = {
    open(socket: Socket<Connection>) {
      socket.setNoDelay(true)
    },
    data(socket: Socket<Connection>, chunk: Uint8Array) {
      onData(socket.data, chunk)
    },
    drain(socket: Socket<Connection>) {
      const conn = socket.data
      if (!conn.backlog) return
      const rest = conn.backlog
      conn.backlog = null
      writeOrQueue(conn, rest)
    },
    close(socket: Socket<Connection>) {
      onClosed(socket.data, new UpstreamError('refused', 'core closed the connection'))
    },
    error(socket: Socket<Connection>, error: Error) {
      onClosed(socket.data, new UpstreamError('refused', `core connection failed: ${error.message}`, { cause: error }))
    },
    end(socket: Socket<Connection>) {
      // Core's FIN, which may come right behind a kept-alive answer (core stopping, or its idle
      // timeout). Ending our side too closes the socket at once: Bun runs `close` inside this call,
      // so an idle connection leaves the pool before anything can take it. A request that took it
      // before the FIN was read is resent (mayResend).
      socket.end()
    },
  }

  function poolFor(origin: string): Pool {
    let pool = pools.get(origin)
    if (!pool) {
      const url = new URL(origin)
      const tls = url.protocol === 'https:'
      pool = { hostname: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (tls ? 443 : 80), tls, host: url.host, idle: [], slots: new Slots<Exchange>(maxConnections, maxQueued) }
      pools.set(origin, pool)
    }
    return pool
  }

  /** Opens a connection on a slot the caller has taken. */
  async function connect(pool: Pool): Promise<Connection> {
    const conn: Connection = { pool, socket: null, parser: new ResponseParser(isDroppedResponseHeader), exchange: null, reused: false, idleSince: 0, backlog: null, drained: null, paused: false, closed: false, holdsSlot: true }
    try {
      conn.socket = await Bun.connect<Connection>({ hostname: pool.hostname, port: pool.port, tls: pool.tls, data: conn, socket: handlers })
    } catch (error) {
      conn.closed = true
      leave(conn)
      throw new UpstreamError('refused', `core could not be reached: ${(error as Error)?.message ?? error}`, { cause: error })
    }
    return conn
  }

  function takeIdle(pool: Pool, now: number): Connection | null {
    while (pool.idle.length > 0) {
      const conn = pool.idle.pop()!
      if (!conn.closed && now - conn.idleSince <= maxIdleMs) return conn
      destroy(conn)
    }
    return null
  }

  function release(conn: Connection): void {
    conn.exchange = null
    conn.reused = true
    conn.idleSince = performance.now()
    if (conn.paused) resume(conn)
    if (conn.closed) return destroy(conn)
    // A request waiting for a connection takes this one before it goes idle.
    const waiter = conn.pool.slots.next()
    if (waiter) return handTo(waiter, conn)
    if (conn.pool.idle.length >= maxIdle) return destroy(conn)
    conn.pool.idle.push(conn)
  }

  function destroy(conn: Connection): void {
    const idleAt = conn.pool.idle.indexOf(conn)
    if (idleAt !== -1) conn.pool.idle.splice(idleAt, 1)
    // A body writer waiting for `drain` learns the connection is gone.
    const drained = conn.drained
    conn.backlog = null
    conn.drained = null
    drained?.()
    if (!conn.closed) {
      conn.closed = true
      conn.socket?.terminate()
    }
    leave(conn)
  }

  /** A connection closed: its slot goes to the first waiter, on a connection of its own. */
  function leave(conn: Connection): void {
    if (!conn.holdsSlot) return
    conn.holdsSlot = false
    const waiter = conn.pool.slots.free()
    if (waiter) connectFor(dequeued(waiter), conn.pool)
  }

  /** Writes what the socket takes now; the rest waits for `drain`. Resolves when all is written. */
  function writeOrQueue(conn: Connection, bytes: Uint8Array): void {
    const written = conn.closed ? bytes.byteLength : conn.socket!.write(bytes)
    if (written < bytes.byteLength) {
      conn.backlog = bytes.subarray(Math.max(written, 0))
      return
    }
    const drained = conn.drained
    conn.drained = null
    drained?.()
  }

  const write = (conn: Connection, bytes: Uint8Array): Promise<void> | undefined => {
    writeOrQueue(conn, bytes)
    if (!conn.backlog) return undefined
    return new Promise<void>((resolve) => (conn.drained = resolve))
  }

  /** Writes the request: head and a read body in one write, or head then the streamed body. */
  function sendRequest(conn: Connection, exchange: Exchange): void {
    const body = exchange.request.body
    const { head, chunked } = requestHead(exchange.request, conn.pool.host)
    if (body instanceof ReadableStream) return void streamBody(conn, exchange, head, body, chunked)
    writeOrQueue(conn, body ? Buffer.concat([head, body]) : head)
    if (!conn.backlog) exchange.sent = true
    else conn.drained = () => (exchange.sent = true)
  }

  async function streamBody(conn: Connection, exchange: Exchange, head: Uint8Array, stream: ReadableStream<Uint8Array>, chunked: boolean): Promise<void> {
    const { request } = exchange
    // Content-Length frames the body on this connection (RFC 9112 §6.3): bytes past it would be read
    // by core as a request of their own, past the relay's path rules (smuggling, RFC 9112 §11.2), and
    // a body that ends short leaves core waiting. The runtime frames what it received, but a handler
    // may be given a Request whose header no longer fits its body (one rewritten on the way).
    const body = (exchange.streamed ??= streamedBody(stream, chunked ? Infinity : request.contentLength!))
    // What a connection closed under it left to write again (nothing on a first attempt). Only a
    // reused connection may be closed under it and resent from: on a fresh one nothing is held.
    const replay = body.held
    body.conn = conn
    if (!conn.reused) body.held = null
    const writing = () => body.conn === conn && conn.exchange === exchange
    const frame = (value: Uint8Array) => (chunked ? chunkOf(value) : value)
    const mismatch = (how: string) => new UpstreamError('aborted', `the body is ${how} than its Content-Length of ${request.contentLength}`)
    try {
      await write(conn, head)
      for (const value of replay ?? []) {
        if (!writing()) break
        if (value.byteLength > 0) await write(conn, frame(value))
      }
      while (writing()) {
        const { done, value } = await (body.reading ??= body.reader.read())
        // Handed to a resend: the read is the next connection's to write, not this one's.
        if (body.conn !== conn) return
        body.reading = null
        if (!writing()) break
        if (done) {
          if (body.left > 0 && body.left !== Infinity) throw mismatch('shorter')
          if (chunked) await write(conn, LAST_CHUNK)
          exchange.sent = true
          if (!exchange.answered) clock.arm(exchange)
          return
        }
        body.left -= value.byteLength
        if (body.left < 0) {
          await body.reader.cancel().catch(() => {})
          throw mismatch('longer')
        }
        hold(body, value)
        if (value.byteLength > 0) await write(conn, frame(value))
        if (!writing()) break
        if (!exchange.answered) clock.arm(exchange)
      }
      // Core answered or the exchange failed before the body was through: stop reading the client.
      // A body handed to a resend is not this writer's to stop.
      if (body.conn === conn) await body.reader.cancel().catch(() => {})
    } catch (error) {
      // The client's body failed (it went away, passed the limit, or did not fit its length): the
      // exchange cannot finish.
      if (writing()) fail(conn, error instanceof UpstreamError ? error : new UpstreamError('aborted', 'the client body failed', { cause: error }))
    }
  }

  function fail(conn: Connection, error: UpstreamError): void {
    const exchange = conn.exchange
    // Detached first: terminating the socket runs its close handler at once.
    conn.exchange = null
    destroy(conn)
    if (!exchange) return
    clock.settle(exchange)
    unwatch(exchange)
    if (!exchange.answered) {
      exchange.answered = true
      exchange.reject(error)
    } else if (exchange.body) {
      try {
        exchange.body.error(error)
      } catch {}
    }
  }

  function resume(conn: Connection): void {
    conn.paused = false
    conn.socket?.resume()
  }

  /** The exchange is over: the client's going away no longer concerns it. */
  function unwatch(exchange: Exchange): void {
    if (exchange.onAbort) exchange.watched!.removeEventListener('abort', exchange.onAbort)
    exchange.onAbort = undefined
    exchange.watched = null
  }

  function watch(exchange: Exchange, signal: AbortSignal): void {
    exchange.onAbort = () => giveUp(exchange, new UpstreamError('aborted', 'the client went away'))
    exchange.watched = signal
    signal.addEventListener('abort', exchange.onAbort, { once: true })
  }

  function onClosed(conn: Connection, error: UpstreamError): void {
    conn.closed = true
    const exchange = conn.exchange
    // Decided before the slot is let go: the resend's connection takes it over, ahead of any waiter.
    if (exchange && !(exchange.answered && conn.parser.endsAtClose()) && mayResend(conn, exchange)) {
      conn.holdsSlot = false
      destroy(conn)
      conn.exchange = null
      if (exchange.streamed) exchange.streamed.conn = null
      connectFor(exchange, conn.pool)
      return
    }
    destroy(conn)
    if (!exchange) return
    // A body that runs until the connection closes (no length, no chunking) ends here.
    if (exchange.answered && conn.parser.endsAtClose()) {
      conn.exchange = null
      clock.settle(exchange)
      unwatch(exchange)
      exchange.body?.close()
      return
    }
    fail(conn, error)
  }

  /**
   * Whether a request whose connection closed under it goes out once more, on a fresh connection.
   * Only on a reused connection, before any byte of an answer, with a body the relay can write whole
   * again: none, the bytes it read, or a streamed body of which nothing was read yet or what was read
   * is still held (`held`, at most HELD_MAX_BYTES); the rest of it is then read as before, once.
   * That is the race of a kept-alive connection: core closes it between requests (its idle timeout,
   * a graceful stop; a server that has read a request answers it before it closes), and its FIN
   * crosses the request on the wire or lands just after an answer, too late for `end` to have taken
   * the connection out of the pool. Core never had that request. RFC 9110 §9.2.2 lets a client resend
   * a non-idempotent method when it knows the semantics are idempotent: Go's Transport resends a
   * written POST only when it carries an Idempotency-Key, and WIRE.md's durability rule is ours (a
   * resent replay chunk is known by its content, a resent event by its uuid). So the rare core that
   * fails after reading a request costs what a retry of the tracker's would. A fresh
   * connection is never `reused`, so this is once; a connection that fails fresh is core down: 502.
   */
  const mayResend = (conn: Connection, exchange: Exchange): boolean =>
    !exchange.answered && conn.reused && !conn.parser.receivedAny() && (!(exchange.request.body instanceof ReadableStream) || exchange.streamed?.held != null)

  function onData(conn: Connection, chunk: Uint8Array): void {
    const exchange = conn.exchange
    if (!exchange) return destroy(conn) // bytes nobody asked for: the connection is not in a known state
    let result
    try {
      result = conn.parser.push(chunk, exchange.request.method === 'HEAD')
    } catch (error) {
      return fail(conn, new UpstreamError('refused', `core's answer could not be read: ${(error as Error).message}`))
    }
    if (result.head && !exchange.answered) answer(conn, exchange, result.head, result.complete)
    if (conn.exchange !== exchange) return // the answer could not be passed on: failed, and the connection with it
    for (const piece of result.body) exchange.body?.enqueue(piece)
    if (result.done) return finish(conn, exchange, result.keepAlive)
    // Core is not done: any byte of its answer restarts the wait for the rest (see timing.ts).
    if (!exchange.answered) return clock.arm(exchange)
    // Backpressure while the client is behind; only while bytes of this answer are still due: a
    // connection paused as its answer ended went back to the pool deaf, and the next request on it
    // waited for the timeout (the stream that would resume it is closed and never pulls again).
    if (exchange.body && (exchange.body.desiredSize ?? 1) <= 0) {
      conn.paused = true
      conn.socket?.pause()
      clock.hold(exchange)
    } else clock.wait(exchange)
  }

  function answer(conn: Connection, exchange: Exchange, head: ParsedHead, complete: Uint8Array | null): void {
    let body: BodyInit | null = complete as Uint8Array<ArrayBuffer> | null
    if (!complete && head.hasBody) {
      body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          exchange.body = controller
        },
        pull: () => {
          if (!conn.paused || conn.exchange !== exchange) return
          // The client caught up: bytes are due from core again.
          resume(conn)
          clock.wait(exchange)
        },
        cancel: () => {
          if (conn.exchange === exchange) fail(conn, new UpstreamError('aborted', 'the client went away'))
        },
      })
    }
    let response: Response
    try {
      response = new Response(body as BodyInit | null, { status: head.status, statusText: head.statusText, headers: head.headers })
    } catch (error) {
      // A field value or status text a Response refuses (a bare CR or LF in it): 502, like any
      // answer that cannot be read. Unanswered, the client waited forever and the connection leaked.
      exchange.body = null
      return fail(conn, new UpstreamError('refused', `core's answer could not be passed on: ${(error as Error).message}`))
    }
    clock.settle(exchange)
    exchange.answered = true
    // An answer begun is never resent: what was held of the body need not be kept.
    if (exchange.streamed) exchange.streamed.held = null
    exchange.resolve(response)
  }

  function finish(conn: Connection, exchange: Exchange, keepAlive: boolean): void {
    exchange.body?.close()
    exchange.body = null
    clock.settle(exchange)
    unwatch(exchange)
    if (keepAlive && exchange.sent && !conn.closed) release(conn)
    else {
      conn.exchange = null
      destroy(conn)
    }
  }

  function attach(exchange: Exchange, conn: Connection): void {
    if (exchange.answered) return release(conn) // timed out or aborted while connecting
    conn.exchange = exchange
    exchange.conn = conn
    exchange.sent = false // a resent request: written anew on this connection
    conn.parser.reset()
    sendRequest(conn, exchange)
  }

  /** A fresh connection for the exchange, on a slot already taken for it. */
  function connectFor(exchange: Exchange, pool: Pool): void {
    connect(pool).then(
      (conn) => attach(exchange, conn),
      (error) => giveUp(exchange, error),
    )
  }

  /**
   * A connection for a new exchange: an idle one, else a new one while the pool has room, else a
   * place in the queue, else 503. A body of undeclared size never takes an idle connection: core may
   * be closing it, and such a body cannot be written again (see `undeclaredStream`); an idle one
   * gives up its slot to it instead.
   */
  function acquire(exchange: Exchange, pool: Pool): void {
    const fresh = undeclaredStream(exchange.request)
    if (!fresh) {
      const idle = takeIdle(pool, performance.now())
      if (idle) return attach(exchange, idle)
    }
    if (pool.slots.take()) return connectFor(exchange, pool)
    if (fresh && pool.idle.length > 0) {
      const idle = pool.idle.pop()!
      idle.holdsSlot = false
      destroy(idle)
      return connectFor(exchange, pool)
    }
    if (!pool.slots.wait(exchange)) return giveUp(exchange, overloaded(`more than ${maxQueued} requests are waiting for one of ${maxConnections} connections to core`))
    exchange.queued = true
    // A read body is not watched once sent (index.ts), but a client gone while it waits leaves the queue.
    const signal = exchange.request.signal ?? exchange.request.incoming?.signal
    if (!exchange.onAbort && signal) {
      if (signal.aborted) return giveUp(exchange, new UpstreamError('aborted', 'the client went away'))
      watch(exchange, signal)
    }
  }

  /** Out of the queue, with a connection coming: core's whole `timeoutMs` starts now. */
  function dequeued(exchange: Exchange): Exchange {
    exchange.queued = false
    if (!exchange.request.signal) unwatch(exchange)
    clock.arm(exchange)
    return exchange
  }

  /** A released connection for a waiter; one for a body of undeclared size is replaced by a fresh one. */
  function handTo(waiter: Exchange, conn: Connection): void {
    dequeued(waiter)
    if (!undeclaredStream(waiter.request)) return attach(waiter, conn)
    conn.holdsSlot = false
    destroy(conn)
    connectFor(waiter, conn.pool)
  }

  const overloaded = (message: string) => new UpstreamError('overloaded', message)

  /** Ends an exchange from outside (timeout, client gone, connect failure). */
  function giveUp(exchange: Exchange, error: UpstreamError): void {
    if (exchange.queued) {
      exchange.queued = false
      poolFor(exchange.request.origin).slots.leave(exchange)
      // Core was never asked: it is the relay that is full, not core that is slow.
      if (error.reason === 'timeout') error = overloaded(`no connection to core came free within ${exchange.request.timeoutMs} ms`)
    }
    if (exchange.conn && exchange.conn.exchange === exchange) return fail(exchange.conn, error)
    clock.settle(exchange)
    if (exchange.answered) return
    exchange.answered = true
    unwatch(exchange)
    // A resend given up while it connects: no writer is left to stop reading the client's body.
    exchange.streamed?.reader.cancel().catch(() => {})
    exchange.reject(error)
  }

  return (request) =>
    new Promise<Response>((resolve, reject) => {
      const exchange: Exchange = { request, resolve, reject, conn: null, answered: false, sent: false, timer: undefined, idle: null, onAbort: undefined, body: null, streamed: null, queued: false, watched: null }
      const { signal } = request
      if (signal?.aborted) return reject(new UpstreamError('aborted', 'the client went away'))
      // Refused before a connection is taken: the head is written once a connection is there, and a
      // throw from that callback (after a connect) would reach no one while the client waited.
      if (UNSAFE_TARGET.test(request.target)) return reject(new UpstreamError('refused', 'refusing a request target with whitespace or control characters'))
      clock.arm(exchange)
      if (signal) watch(exchange, signal)
      acquire(exchange, poolFor(request.origin))
    })
}
