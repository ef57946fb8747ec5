import type { HeaderList } from '../headers.ts'

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

/**
 * Sends one request upstream and resolves with core's answer (its body may still be streaming),
 * without the fields that end at the relay (`isDroppedResponseHeader`: hop-by-hop, Set-Cookie).
 * Rejects with an `UpstreamError` saying why it failed: refused/reset, timeout or aborted.
 */
export type UpstreamClient = (request: UpstreamRequest) => Promise<Response>
