import { UpstreamError } from '../errors.ts'
import { isDroppedResponseHeader } from '../headers.ts'
import { ResponseParser } from './parser.ts'
import { Slots } from './slots.ts'
import type { ClientState, Connection, Exchange, Pool } from './state.ts'
import { connectFor, dequeued, handTo } from './exchange.ts'

/**
 * A connection's life in the socket client, apart from the exchange it carries: its pool, opening
 * it on a slot, writing with backpressure, pausing and resuming its reads, going back to the pool
 * or closing, and handing its slot on when it closes. Where a request waits for a connection, a
 * released one or its slot goes to that request (exchange.ts) before anything else.
 */

export function poolFor(client: ClientState, origin: string): Pool {
  let pool = client.pools.get(origin)
  if (!pool) {
    const url = new URL(origin)
    const tls = url.protocol === 'https:'
    pool = { hostname: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (tls ? 443 : 80), tls, host: url.host, idle: [], conns: [], slots: new Slots<Exchange>(client.maxConnections, client.maxQueued), connectsLetGo: 0 }
    client.pools.set(origin, pool)
  }
  return pool
}

/** Opens a connection for an exchange, on a slot the caller has taken. */
export async function connect(client: ClientState, pool: Pool, exchange: Exchange): Promise<Connection> {
  const conn: Connection = { pool, socket: null, parser: new ResponseParser(isDroppedResponseHeader), exchange: null, connectingFor: exchange, reused: false, idleSince: 0, backlog: null, drained: null, paused: false, closed: false, holdsSlot: true, letGo: false }
  pool.conns.push(conn)
  try {
    conn.socket = await Bun.connect<Connection>({ hostname: pool.hostname, port: pool.port, tls: pool.tls, data: conn, socket: client.handlers })
  } catch (error) {
    conn.closed = true
    forget(conn)
    leave(client, conn)
    throw new UpstreamError('refused', `core could not be reached: ${(error as Error)?.message ?? error}`, { cause: error })
  } finally {
    conn.connectingFor = null
    if (conn.letGo) pool.connectsLetGo--
  }
  return conn
}

/**
 * The exchange a connection is being opened for was given up (its time up, its client gone): the
 * connect goes on, since Bun's cannot be stopped, but its slot goes at once to the next request.
 * Towards a core whose host drops connects (down, or behind a firewall that drops rather than
 * refuses), a connect lasts until the system gives up on it, about two minutes: holding its slot
 * that long, it had every request meanwhile wait in the queue and be refused `overloaded`, and once
 * core was back, requests still waited for those connects' next retries. At most `maxConnections`
 * connects are let go at a time per upstream, so the sockets opening stay bounded; past that, a
 * connect keeps its slot as before. One let go that opens after all takes a free slot and joins the
 * pool, or is closed (`attach`, exchange.ts).
 */
export function letGo(client: ClientState, exchange: Exchange): void {
  const pool = poolFor(client, exchange.request.origin)
  if (pool.connectsLetGo >= client.maxConnections) return
  const conn = pool.conns.find((c) => c.connectingFor === exchange)
  if (!conn || !conn.holdsSlot) return
  conn.connectingFor = null
  conn.letGo = true
  pool.connectsLetGo++
  leave(client, conn)
}

/** A connect let go that opened: into the pool on a slot that is free now, else closed. */
export function adopt(client: ClientState, conn: Connection): void {
  if (!conn.pool.slots.take()) return destroy(client, conn)
  conn.holdsSlot = true
  conn.letGo = false
  release(client, conn)
}

/** Out of its pool's list of connections, once it is closed. */
function forget(conn: Connection): void {
  const at = conn.pool.conns.indexOf(conn)
  if (at !== -1) conn.pool.conns.splice(at, 1)
}

/**
 * Each exchange in flight on the client: on a connection, being connected for, or queued. The
 * clock's view (timing.ts); an exchange may be visited twice.
 */
export function visitInFlight(client: ClientState, visit: (exchange: Exchange) => void): void {
  for (const pool of client.pools.values()) {
    for (const conn of pool.conns) {
      const exchange = conn.exchange ?? conn.connectingFor
      if (exchange) visit(exchange)
    }
    pool.slots.forEachWaiting(visit)
  }
}

export function takeIdle(client: ClientState, pool: Pool, now: number): Connection | null {
  while (pool.idle.length > 0) {
    const conn = pool.idle.pop()!
    if (!conn.closed && now - conn.idleSince <= client.maxIdleMs) return conn
    destroy(client, conn)
  }
  return null
}

export function release(client: ClientState, conn: Connection): void {
  conn.exchange = null
  conn.reused = true
  conn.idleSince = performance.now()
  if (conn.paused) resume(conn)
  if (conn.closed) return destroy(client, conn)
  // A request waiting for a connection takes this one before it goes idle.
  const waiter = conn.pool.slots.next()
  if (waiter) return handTo(client, waiter, conn)
  if (conn.pool.idle.length >= client.maxIdle) return destroy(client, conn)
  conn.pool.idle.push(conn)
}

export function destroy(client: ClientState, conn: Connection): void {
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
  forget(conn)
  leave(client, conn)
}

/** A connection closed: its slot goes to the first waiter, on a connection of its own. */
function leave(client: ClientState, conn: Connection): void {
  if (!conn.holdsSlot) return
  conn.holdsSlot = false
  const waiter = conn.pool.slots.free()
  if (waiter) connectFor(client, dequeued(client, waiter), conn.pool)
}

/** Writes what the socket takes now; the rest waits for `drain`. Calls `drained` once all is written. */
export function writeOrQueue(conn: Connection, bytes: Uint8Array): void {
  const written = conn.closed ? bytes.byteLength : conn.socket!.write(bytes)
  if (written < bytes.byteLength) {
    conn.backlog = bytes.subarray(Math.max(written, 0))
    return
  }
  const drained = conn.drained
  conn.drained = null
  drained?.()
}

/** The socket took the rest of a write: the backlog goes next. */
export function drain(conn: Connection): void {
  if (!conn.backlog) return
  const rest = conn.backlog
  conn.backlog = null
  writeOrQueue(conn, rest)
}

export function write(conn: Connection, bytes: Uint8Array): Promise<void> | undefined {
  writeOrQueue(conn, bytes)
  if (!conn.backlog) return undefined
  return new Promise<void>((resolve) => (conn.drained = resolve))
}

/** The client is behind on the answer's body: core's bytes wait in the socket until it catches up. */
export function pause(conn: Connection): void {
  conn.paused = true
  conn.socket?.pause()
}

export function resume(conn: Connection): void {
  conn.paused = false
  conn.socket?.resume()
}
