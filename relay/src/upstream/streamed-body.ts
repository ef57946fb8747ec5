import { KEY_IN_BODY_MAX_BYTES } from '../headers.ts'

/**
 * A request body read from the client as it is written upstream. A resend writes it on a fresh
 * connection from where the first left off: what was read and held, then the read under way.
 * `Writer` is whatever writes it (the socket client's connection).
 */
export interface StreamedBody<Writer> {
  reader: ReadableStreamDefaultReader<Uint8Array>
  /** The connection writing it; null while a resend connects. A writer that is no longer it stops. */
  conn: Writer | null
  /** The read under way: a writer that loses the body to a resend leaves it for the next. */
  reading: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | null
  /**
   * Everything read so far, while the connection may be closed under it (a reused one) and it is
   * small (HELD_MAX_BYTES); null once it is not: the body can then no longer be resent.
   */
  held: Uint8Array[] | null
  heldBytes: number
  /** Bytes still due under Content-Length (Infinity when chunked). */
  left: number
}

/**
 * The most of a streamed body kept to write again: what the relay already reads whole of a small
 * body, so a streamed request never holds more than a small one. The chunks are the ones read, kept
 * by reference, not copied.
 */
export const HELD_MAX_BYTES = KEY_IN_BODY_MAX_BYTES

/** The client's stream, not read yet; `left` is its Content-Length, or Infinity when it goes chunked. */
export const streamedBody = <Writer>(stream: ReadableStream<Uint8Array>, left: number): StreamedBody<Writer> => ({
  reader: stream.getReader(),
  conn: null,
  reading: null,
  held: [],
  heldBytes: 0,
  left,
})

/**
 * A streamed body of undeclared size. Through the relay it is one already read past HELD_MAX_BYTES
 * (index.ts reads that much to tell a small body from a large one), so its first writes are more than
 * can be held: on a kept-alive connection core had just closed, it could be written neither whole
 * nor again, and the client got 502 while core was up. Such a body goes on a fresh connection.
 */
export const undeclaredStream = (request: { body: unknown; contentLength: number | null }): boolean => request.contentLength === null && request.body instanceof ReadableStream

/** Keeps a piece read to write again, while all that was read stays within the bound. */
export function hold(body: StreamedBody<unknown>, value: Uint8Array): void {
  if (!body.held) return
  body.heldBytes += value.byteLength
  if (body.heldBytes <= HELD_MAX_BYTES) body.held.push(value)
  else body.held = null
}
