/**
 * A request body read from the client as it is written upstream, on the one fresh connection it
 * ever takes (see `unreplayable`): it is never resent, so nothing of it is kept once written.
 */
export interface StreamedBody {
  reader: ReadableStreamDefaultReader<Uint8Array>
  /** Bytes still due under Content-Length (Infinity when chunked). */
  left: number
}

/** The client's stream, not read yet; `left` is its Content-Length, or Infinity when it goes chunked. */
export const streamedBody = (stream: ReadableStream<Uint8Array>, left: number): StreamedBody => ({ reader: stream.getReader(), left })

/**
 * A body the relay cannot write whole again: any streamed one. Through the relay it is over 64 KB,
 * and pieces of it are written as they are read, so on a kept-alive connection core had just closed
 * (its idle timeout crossing the request on the wire) it could be written neither whole nor again,
 * and the client got 502 while core was up. Whatever its framing (chunked, or a declared
 * Content-Length the relay streams) it goes on a fresh connection, which is never resent from:
 * one that fails is core down. Bytes read whole, or no body, are written again on a fresh
 * connection when that race takes a kept-alive one (resend.ts), and so may take idle ones.
 */
export const unreplayable = (request: { body: unknown }): boolean => request.body instanceof ReadableStream
