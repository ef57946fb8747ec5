import { UpstreamError } from '../errors.ts'
import { unreplayable } from './streamed-body.ts'
import type { ClientState, Connection, Exchange, Pool } from './state.ts'
import { adopt, connect, destroy, letGo, poolFor, release, takeIdle } from './connection.ts'
import { sendRequest } from './request-writer.ts'

/**
 * An exchange's way to a connection and its end from outside: taking an idle connection, a new one
 * or a place in the queue (slots.ts), being attached to a connection and written, and failing or
 * being given up (timeout, client gone, connect failure). Reading the answer is answer.ts's; what
 * follows a connection closed under the exchange is resend.ts's.
 */

/**
 * A connection for a new exchange: an idle one, else a new one while the pool has room, else a
 * place in the queue, else 503. A body that cannot be written again never takes an idle connection:
 * core may be closing it (see `unreplayable`); an idle one gives up its slot to it instead.
 */
export function acquire(client: ClientState, exchange: Exchange, pool: Pool): void {
  const fresh = unreplayable(exchange.request)
  if (!fresh) {
    const idle = takeIdle(client, pool, performance.now())
    if (idle) return attach(client, exchange, idle)
  }
  if (pool.slots.take()) return connectFor(client, exchange, pool)
  if (fresh && pool.idle.length > 0) {
    const idle = pool.idle.pop()!
    idle.holdsSlot = false
    destroy(client, idle)
    return connectFor(client, exchange, pool)
  }
  if (!pool.slots.wait(exchange)) return giveUp(client, exchange, overloaded(`more than ${client.maxQueued} requests are waiting for one of ${client.maxConnections} connections to core`))
  exchange.queued = true
  // A read body is not watched once sent (index.ts), but a client gone while it waits leaves the queue.
  const signal = exchange.request.signal ?? exchange.request.incoming?.signal
  if (!exchange.onAbort && signal) {
    if (signal.aborted) return giveUp(client, exchange, new UpstreamError('aborted', 'the client went away'))
    watch(client, exchange, signal)
  }
}

function attach(client: ClientState, exchange: Exchange, conn: Connection): void {
  // Timed out or aborted while connecting: the connection is kept for the next request.
  if (exchange.answered) return conn.letGo ? adopt(client, conn) : release(client, conn)
  conn.exchange = exchange
  exchange.conn = conn
  exchange.sent = false // a resent request: written anew on this connection
  conn.parser.reset()
  sendRequest(client, conn, exchange)
}

/** A fresh connection for the exchange, on a slot already taken for it. */
export function connectFor(client: ClientState, exchange: Exchange, pool: Pool): void {
  connect(client, pool, exchange).then(
    (conn) => attach(client, exchange, conn),
    (error) => giveUp(client, exchange, error),
  )
}

/** Out of the queue, with a connection coming: core's whole `timeoutMs` starts now. */
export function dequeued(client: ClientState, exchange: Exchange): Exchange {
  exchange.queued = false
  if (!exchange.request.signal) unwatch(exchange)
  client.clock.arm(exchange)
  return exchange
}

/** A released connection for a waiter; one for a body that cannot be written again is replaced by a fresh one. */
export function handTo(client: ClientState, waiter: Exchange, conn: Connection): void {
  dequeued(client, waiter)
  if (!unreplayable(waiter.request)) return attach(client, waiter, conn)
  conn.holdsSlot = false
  destroy(client, conn)
  connectFor(client, waiter, conn.pool)
}

const overloaded = (message: string) => new UpstreamError('overloaded', message)

export function watch(client: ClientState, exchange: Exchange, signal: AbortSignal): void {
  exchange.onAbort = () => giveUp(client, exchange, new UpstreamError('aborted', 'the client went away'))
  exchange.watched = signal
  signal.addEventListener('abort', exchange.onAbort, { once: true })
}

/** The exchange is over: the client's going away no longer concerns it. */
export function unwatch(exchange: Exchange): void {
  if (exchange.onAbort) exchange.watched!.removeEventListener('abort', exchange.onAbort)
  exchange.onAbort = undefined
  exchange.watched = null
}

/** Ends an exchange from outside (timeout, client gone, connect failure). */
export function giveUp(client: ClientState, exchange: Exchange, error: UpstreamError): void {
  if (exchange.queued) {
    exchange.queued = false
    poolFor(client, exchange.request.origin).slots.leave(exchange)
    // Core was never asked: it is the relay that is full, not core that is slow.
    if (error.reason === 'timeout') error = overloaded(`no connection to core came free within ${exchange.request.timeoutMs} ms`)
  }
  if (exchange.conn && exchange.conn.exchange === exchange) return fail(client, exchange.conn, error)
  client.clock.settle(exchange)
  if (exchange.answered) return
  exchange.answered = true
  unwatch(exchange)
  letGo(client, exchange)
  exchange.reject(error)
}

/** Ends the connection's exchange with an error: the connection is closed, never pooled. */
export function fail(client: ClientState, conn: Connection, error: UpstreamError): void {
  const exchange = conn.exchange
  // Detached first: terminating the socket runs its close handler at once.
  conn.exchange = null
  destroy(client, conn)
  if (!exchange) return
  client.clock.settle(exchange)
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
