import type { UpstreamRequest } from './types.ts'

/** A target with these would end the request line early or smuggle a line of its own into the head. */
export const UNSAFE_TARGET = /[\s\x00-\x1f\x7f]/
export const CRLF = '\r\n'

/**
 * The request's head as it goes on the wire, with the body's framing (RFC 9112 §6): a length when
 * the relay knows it, chunked for a streamed body of unknown length, and `content-length: 0` on a
 * POST without one, which core would otherwise wait on.
 */
export function requestHead(request: UpstreamRequest, host: string): { head: Buffer; chunked: boolean } {
  const body = request.body
  const chunked = body instanceof ReadableStream && request.contentLength === null
  const length = body instanceof Uint8Array ? body.byteLength : body ? request.contentLength : request.method === 'POST' ? 0 : null
  let head = `${request.method} ${request.target} HTTP/1.1${CRLF}host: ${host}${CRLF}`
  for (const [name, value] of request.headers) head += `${name}: ${value}${CRLF}`
  if (chunked) head += `transfer-encoding: chunked${CRLF}`
  else if (length !== null) head += `content-length: ${length}${CRLF}`
  return { head: Buffer.from(head + CRLF, 'latin1'), chunked }
}

/** A piece of a chunked body (RFC 9112 §7.1), and the last chunk that ends one. */
export const chunkOf = (value: Uint8Array): Buffer => Buffer.concat([Buffer.from(`${value.byteLength.toString(16)}${CRLF}`, 'latin1'), value, Buffer.from(CRLF, 'latin1')])
export const LAST_CHUNK = Buffer.from(`0${CRLF}${CRLF}`, 'latin1')
