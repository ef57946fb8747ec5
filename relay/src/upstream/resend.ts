import type { UpstreamError } from '../errors.ts'
import type { ClientState, Connection, Exchange } from './state.ts'
import { unreplayable } from './streamed-body.ts'
import { destroy } from './connection.ts'
import { connectFor, fail, unwatch } from './exchange.ts'

/**
 * A connection closed under its exchange: the request goes out once more on a fresh connection when
 * core cannot have had it (the race of a kept-alive connection), an answer that runs until the close
 * ends there, and anything else fails.
 */

export function onClosed(client: ClientState, conn: Connection, error: UpstreamError): void {
  conn.closed = true
  const exchange = conn.exchange
  // Decided before the slot is let go: the resend's connection takes it over, ahead of any waiter.
  if (exchange && !(exchange.answered && conn.parser.endsAtClose()) && mayResend(conn, exchange)) {
    conn.holdsSlot = false
    destroy(client, conn)
    conn.exchange = null
    connectFor(client, exchange, conn.pool)
    return
  }
  destroy(client, conn)
  if (!exchange) return
  // A body that runs until the connection closes (no length, no chunking) ends here.
  if (exchange.answered && conn.parser.endsAtClose()) {
    conn.exchange = null
    client.clock.settle(exchange)
    unwatch(exchange)
    exchange.body?.close()
    return
  }
  fail(client, conn, error)
}

/**
 * Whether a request whose connection closed under it goes out once more, on a fresh connection.
 * Only on a reused connection, before any byte of an answer, with a body the relay can write whole
 * again: none, or the bytes it read. A streamed body never reaches a reused connection (it takes a
 * fresh one, see `unreplayable`); the check below says so rather than relying on it.
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
  !exchange.answered && conn.reused && !conn.parser.receivedAny() && !unreplayable(exchange.request)
