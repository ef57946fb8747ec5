import type { HeaderList } from '../headers.ts'
import type { ParsedHead } from './parser.ts'

/** One request to core, as the relay has prepared it: target fixed, headers already filtered. */
export interface UpstreamRequest {
  /** "http://127.0.0.1:8000": from configuration only. */
  origin: string
  /** Request target on that origin: path and query ("/api/ingestion/logs?compression=gzip"). */
  target: string
  method: string
  headers: HeaderList
  /** Bytes the relay read (small bodies), the client's stream (large ones), or none. */
  body: Uint8Array | ReadableStream<Uint8Array> | null
  /** Size of a streamed body when the client declared it; null streams it chunked. */
  contentLength: number | null
  /** Aborts when the client goes away: the upstream exchange is torn down with it. */
  signal?: AbortSignal
  /**
   * The client's request, when `signal` is not given: its signal is read only while the exchange
   * waits for a connection (a client gone leaves the queue), since Bun makes it on the first read.
   */
  incoming?: { readonly signal: AbortSignal | null }
  /** The longest core may stay silent: before its answer begins, and while the client reads its body. */
  timeoutMs: number
}

/** Where core's answer body goes as it streams: a ReadableStream's controller, or an `AnswerSink`. */
export type BodyController = Pick<ReadableStreamDefaultController<Uint8Array>, 'enqueue' | 'close' | 'error' | 'desiredSize'>

/**
 * Core's answer taken as its parts rather than as a Response, by a server that writes HTTP/1.1 to
 * its client itself (standalone/): no Response, no stream, no promise, the head's fields as parsed.
 * The body's pieces follow through the controller's methods; `desiredSize` at 0 or below says the
 * client is behind, and the connection to core pauses until `flow.resume()`.
 */
export interface AnswerSink extends BodyController {
  /**
   * The answer began: its head, and its whole body when it arrived with the head (`complete`, and
   * `received`: the answer's bytes as they came, when they came in one read), else pieces follow,
   * paced through `flow`.
   */
  head(head: ParsedHead, complete: Uint8Array | null, received: Uint8Array | null, flow: AnswerFlow | null): void
  /** The exchange failed before any answer: why (an `UpstreamError`). */
  fail(error: unknown): void
}

export interface AnswerFlow {
  /** The client caught up: bytes are due from core again. */
  resume(): void
  /** The client went away: the exchange ends, and its connection to core is closed. */
  cancel(): void
}

/**
 * Sends one request upstream and resolves with core's answer (its body may still be streaming),
 * without the fields that end at the relay (`isDroppedResponseHeader`: hop-by-hop, Set-Cookie).
 * Rejects with an `UpstreamError` saying why it failed: refused/reset, timeout or aborted.
 */
export type UpstreamClient = (request: UpstreamRequest) => Promise<Response>
