import { UpstreamError } from '../errors.ts'
import type { ParsedHead } from './parser.ts'
import type { ClientState, Connection, Exchange } from './state.ts'
import type { AnswerFlow, AnswerSink } from './types.ts'
import { destroy, pause, release, resume } from './connection.ts'
import { fail, unwatch } from './exchange.ts'

/**
 * Core's answer, read on the socket's own callback: parsed, passed on as a Response (or in parts, to
 * a sink) whose body streams with backpressure (the socket pauses while the client is behind), and
 * finished by putting the connection back in the pool when core keeps it alive, or closing it.
 */

export function onData(client: ClientState, conn: Connection, chunk: Uint8Array): void {
  const exchange = conn.exchange
  if (!exchange) return destroy(client, conn) // bytes nobody asked for: the connection is not in a known state
  let result
  try {
    result = conn.parser.push(chunk, exchange.request.method === 'HEAD')
  } catch (error) {
    return fail(client, conn, new UpstreamError('refused', `core's answer could not be read: ${(error as Error).message}`))
  }
  if (result.head && !exchange.answered) answer(client, conn, exchange, result.head, result.complete, result.received)
  if (conn.exchange !== exchange) return // the answer could not be passed on: failed, and the connection with it
  for (const piece of result.body) exchange.body?.enqueue(piece)
  if (result.done) return finish(client, conn, exchange, result.keepAlive)
  // Core is not done: any byte of its answer restarts the wait for the rest (see timing.ts).
  if (!exchange.answered) return client.clock.arm(exchange)
  // Backpressure while the client is behind; only while bytes of this answer are still due: a
  // connection paused as its answer ended went back to the pool deaf, and the next request on it
  // waited for the timeout (the stream that would resume it is closed and never pulls again).
  if (exchange.body && (exchange.body.desiredSize ?? 1) <= 0) {
    pause(conn)
    client.clock.hold(exchange)
  } else client.clock.wait(exchange)
}

function answer(client: ClientState, conn: Connection, exchange: Exchange, head: ParsedHead, complete: Uint8Array | null, received: Uint8Array | null): void {
  if (exchange.sink) return answerInParts(client, conn, exchange, exchange.sink, head, complete, received)
  let body: BodyInit | null = complete as Uint8Array<ArrayBuffer> | null
  if (!complete && head.hasBody) {
    const flow = flowOf(client, conn, exchange)
    body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        exchange.body = controller
      },
      pull: flow.resume,
      cancel: flow.cancel,
    })
  }
  let response: Response
  try {
    response = new Response(body as BodyInit | null, { status: head.status, statusText: head.statusText, headers: head.headers })
  } catch (error) {
    // A field value or status text a Response refuses (a bare CR or LF in it): 502, like any
    // answer that cannot be read. Unanswered, the client waited forever and the connection leaked.
    exchange.body = null
    return fail(client, conn, new UpstreamError('refused', `core's answer could not be passed on: ${(error as Error).message}`))
  }
  client.clock.settle(exchange)
  exchange.answered = true
  exchange.resolve(response)
}

/** The answer's parts to the exchange's sink: the head now, the body's pieces as they come. */
function answerInParts(client: ClientState, conn: Connection, exchange: Exchange, sink: AnswerSink, head: ParsedHead, complete: Uint8Array | null, received: Uint8Array | null): void {
  const streaming = !complete && head.hasBody
  if (streaming) exchange.body = sink
  client.clock.settle(exchange)
  exchange.answered = true
  sink.head(head, complete, received, streaming ? flowOf(client, conn, exchange) : null)
  exchange.resolve(null)
}

/** How the reader of an answer's body paces core, and lets it go. */
function flowOf(client: ClientState, conn: Connection, exchange: Exchange): AnswerFlow {
  return {
    resume: () => {
      if (!conn.paused || conn.exchange !== exchange) return
      // The client caught up: bytes are due from core again.
      resume(conn)
      client.clock.wait(exchange)
    },
    cancel: () => {
      if (conn.exchange === exchange) fail(client, conn, new UpstreamError('aborted', 'the client went away'))
    },
  }
}

function finish(client: ClientState, conn: Connection, exchange: Exchange, keepAlive: boolean): void {
  exchange.body?.close()
  exchange.body = null
  client.clock.settle(exchange)
  unwatch(exchange)
  if (keepAlive && exchange.sent && !conn.closed) release(client, conn)
  else {
    conn.exchange = null
    destroy(client, conn)
  }
}
