import type { Socket } from 'bun'
import { UpstreamError } from '../errors.ts'
import type { AnswerSink, UpstreamClient, UpstreamRequest } from './types.ts'
import { exchangeClock } from './timing.ts'
import { UNSAFE_TARGET } from './head.ts'
import { checkLimits, type SlotLimits } from './slots.ts'
import type { ClientState, Connection, Exchange } from './state.ts'
import { drain, poolFor, visitInFlight } from './connection.ts'
import { acquire, giveUp, watch } from './exchange.ts'
import { onData } from './answer.ts'
import { onClosed } from './resend.ts'

/**
 * A pooled HTTP/1.1 client on Bun's sockets, for the Bun and Elysia adapters. `fetch` works
 * everywhere, but on Bun each call crosses to its HTTP thread and back and allocates a Request; this
 * client writes the head and a small body in one `write`, parses the answer on the socket's own
 * callback and keeps the connection for the next request. Requests are not pipelined: one exchange
 * per connection at a time, at most `maxConnections` of them per upstream (see slots.ts).
 *
 * This file makes the client and wires the socket's callbacks; the parts are beside it: the records
 * (state.ts), a connection's life (connection.ts), an exchange's way to a connection and its end
 * (exchange.ts), writing the request (request-writer.ts), reading the answer (answer.ts) and a
 * connection closed under its exchange (resend.ts).
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

export type SocketClient = UpstreamClient & { forward(request: UpstreamRequest, sink: AnswerSink): void }

export function socketClient({ maxIdle = 256, maxIdleMs = 4000, ...limits }: SocketClientOptions = {}): SocketClient {
  const { maxConnections, maxQueued } = checkLimits(limits)
  const client: ClientState = {
    pools: new Map(),
    clock: exchangeClock<Exchange>(
      (exchange, error) => giveUp(client, exchange, error),
      (visit) => visitInFlight(client, visit),
    ),
    handlers: {
      open(socket: Socket<Connection>) {
        socket.setNoDelay(true)
      },
      data(socket: Socket<Connection>, chunk: Uint8Array) {
        onData(client, socket.data, chunk)
      },
      drain(socket: Socket<Connection>) {
        drain(socket.data)
      },
      close(socket: Socket<Connection>) {
        onClosed(client, socket.data, new UpstreamError('refused', 'core closed the connection'))
      },
      error(socket: Socket<Connection>, error: Error) {
        onClosed(client, socket.data, new UpstreamError('refused', `core connection failed: ${error.message}`, { cause: error }))
      },
      end(socket: Socket<Connection>) {
        // Core's FIN, which may come right behind a kept-alive answer (core stopping, or its idle
        // timeout). Ending our side too closes the socket at once: Bun runs `close` inside this call,
        // so an idle connection leaves the pool before anything can take it. A request that took it
        // before the FIN was read is resent (mayResend, resend.ts).
        socket.end()
      },
    },
    maxIdle,
    maxIdleMs,
    maxConnections,
    maxQueued,
  }

  const start = (request: UpstreamRequest, sink: AnswerSink | null, resolve: Exchange['resolve'], reject: Exchange['reject']) => {
    const exchange: Exchange = { request, sink, resolve, reject, conn: null, answered: false, sent: false, deadline: Infinity, idle: null, onAbort: undefined, body: null, queued: false, watched: null }
    const { signal } = request
    if (signal?.aborted) return reject(new UpstreamError('aborted', 'the client went away'))
    // Refused before a connection is taken: the head is written once a connection is there, and a
    // throw from that callback (after a connect) would reach no one while the client waited.
    if (UNSAFE_TARGET.test(request.target)) return reject(new UpstreamError('refused', 'refusing a request target with whitespace or control characters'))
    client.clock.arm(exchange)
    if (signal) watch(client, exchange, signal)
    acquire(client, exchange, poolFor(client, request.origin))
  }

  const send = (request: UpstreamRequest) => new Promise<Response>((resolve, reject) => start(request, null, resolve as Exchange['resolve'], reject))
  /** The same exchange with core's answer handed to `sink` in parts, and a failure before it to `sink.fail`. */
  const forward = (request: UpstreamRequest, sink: AnswerSink) => start(request, sink, ignore, (error) => sink.fail(error))
  return Object.assign(send, { forward })
}

const ignore = () => {}
