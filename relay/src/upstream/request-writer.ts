import { UpstreamError } from '../errors.ts'
import { chunkOf, LAST_CHUNK, requestHead } from './head.ts'
import { streamedBody } from './streamed-body.ts'
import type { ClientState, Connection, Exchange } from './state.ts'
import { write, writeOrQueue } from './connection.ts'
import { fail } from './exchange.ts'

/**
 * Writing a request on its connection: the head and a read body at once, or the head and then the
 * client's streamed body as it is read, framed to its length (on a fresh connection: streamed-body.ts).
 */

/** Writes the request: head and a read body in one write, or head then the streamed body. */
export function sendRequest(client: ClientState, conn: Connection, exchange: Exchange): void {
  const body = exchange.request.body
  const { head, chunked } = requestHead(exchange.request, conn.pool.host)
  if (body instanceof ReadableStream) return void streamBody(client, conn, exchange, head, body, chunked)
  writeOrQueue(conn, body ? Buffer.concat([head, body]) : head)
  if (!conn.backlog) exchange.sent = true
  else conn.drained = () => (exchange.sent = true)
}

async function streamBody(client: ClientState, conn: Connection, exchange: Exchange, head: Uint8Array, stream: ReadableStream<Uint8Array>, chunked: boolean): Promise<void> {
  const { request } = exchange
  // Content-Length frames the body on this connection (RFC 9112 §6.3): bytes past it would be read
  // by core as a request of their own, past the relay's path rules (smuggling, RFC 9112 §11.2), and
  // a body that ends short leaves core waiting. The runtime frames what it received, but a handler
  // may be given a Request whose header no longer fits its body (one rewritten on the way).
  const body = streamedBody(stream, chunked ? Infinity : request.contentLength!)
  const writing = () => conn.exchange === exchange
  const frame = (value: Uint8Array) => (chunked ? chunkOf(value) : value)
  const mismatch = (how: string) => new UpstreamError('aborted', `the body is ${how} than its Content-Length of ${request.contentLength}`)
  try {
    await write(conn, head)
    while (writing()) {
      const { done, value } = await body.reader.read()
      if (!writing()) break
      if (done) {
        if (body.left > 0 && body.left !== Infinity) throw mismatch('shorter')
        if (chunked) await write(conn, LAST_CHUNK)
        exchange.sent = true
        if (!exchange.answered) client.clock.arm(exchange)
        return
      }
      body.left -= value.byteLength
      if (body.left < 0) {
        await body.reader.cancel().catch(() => {})
        throw mismatch('longer')
      }
      if (value.byteLength > 0) await write(conn, frame(value))
      if (!writing()) break
      if (!exchange.answered) client.clock.arm(exchange)
    }
    // Core answered or the exchange failed before the body was through: stop reading the client.
    await body.reader.cancel().catch(() => {})
  } catch (error) {
    // The client's body failed (it went away, passed the limit, or did not fit its length): the
    // exchange cannot finish.
    if (writing()) fail(client, conn, error instanceof UpstreamError ? error : new UpstreamError('aborted', 'the client body failed', { cause: error }))
  }
}
