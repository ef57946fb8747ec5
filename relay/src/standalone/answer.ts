import { STATUS_CODES } from 'node:http'
import { errorResponse, type RelayErrorCode } from '../errors.ts'
import { isDroppedResponseHeader } from '../headers.ts'
import { chunkOf, CRLF, LAST_CHUNK } from '../upstream/head.ts'
import type { ParsedHead } from '../upstream/parser.ts'
import type { AnswerFlow, AnswerSink } from '../upstream/types.ts'
import { gatewayError } from '../index.ts'
import { answered, cutOff } from './connection.ts'
import { abortSignalOf } from './forward.ts'
import { flushed, isFlushed, send } from './output.ts'
import type { ClientConnection, ClientRequest } from './state.ts'

/**
 * Answers written to the client as HTTP/1.1: core's, passed on in parts as the socket client reads
 * them (`CoreAnswer`, no Response made), and the relay's own or the script's, which are Responses
 * (`writeResponse`). Each is framed for this hop (RFC 9112 §6): core's Content-Length when it sent
 * one, else the length of a body that is all here, else chunked (HTTP/1.0: to the connection's close).
 */

/** Whether the connection ends with this answer: the client asked, its body was left unread, or the server is stopping. */
function closesAfter(conn: ClientConnection, request: ClientRequest): boolean {
  if (request.body && !request.body.done) request.lastOnConnection = true
  if (conn.stopping) request.lastOnConnection = true
  return request.lastOnConnection
}

/** RFC 9112 §9.6 and §9.3: say so when the connection ends; an HTTP/1.0 client kept alive is told it is. */
function connectionField(conn: ClientConnection, request: ClientRequest): string {
  if (closesAfter(conn, request)) return `connection: close${CRLF}`
  return request.head.http10 ? `connection: keep-alive${CRLF}` : ''
}

const statusLine = (status: number, text: string) => `HTTP/1.1 ${status} ${text || STATUS_CODES[status] || ''}${CRLF}`

/**
 * Core's answer, in parts: passed on as it came when it can be (`passable`: nothing of it is left
 * out, and this hop frames it the same), else its head written again from the fields as parsed
 * (hop-by-hop fields and cookies left out), then the body as it comes. One object per request, with
 * no closures: it is the sink the socket client writes to, and the `incoming` it reads the client's
 * going away from while the request waits for a connection.
 */
export class CoreAnswer implements AnswerSink {
  private chunked = false
  private flow: AnswerFlow | null = null
  private resuming = false

  constructor(
    private readonly conn: ClientConnection,
    private readonly request: ClientRequest,
  ) {}

  get signal(): AbortSignal {
    return abortSignalOf(this.request)
  }

  head(head: ParsedHead, complete: Uint8Array | null, received: Uint8Array | null, flow: AnswerFlow | null): void {
    const { conn, request } = this
    this.flow = flow
    if (conn.closed || conn.request !== request) return flow?.cancel()
    if (head.passable && received && !request.head.http10 && !closesAfter(conn, request)) {
      send(conn, received)
      return answered(conn, request)
    }
    let text = statusLine(head.status, head.statusText)
    let length = false
    for (const [name, value] of head.headers) {
      if (name === 'content-length') length = true
      text += `${name}: ${value}${CRLF}`
    }
    if (head.hasBody && !length) {
      if (complete) text += `content-length: ${complete.byteLength}${CRLF}`
      else if (request.head.http10) request.lastOnConnection = true
      else {
        this.chunked = true
        text += `transfer-encoding: chunked${CRLF}`
      }
    }
    text += connectionField(conn, request) + CRLF
    const headBytes = Buffer.from(text, 'latin1')
    send(conn, complete && complete.byteLength > 0 ? Buffer.concat([headBytes, complete]) : headBytes)
    if (!flow) return answered(conn, request)
    // Streaming: a client gone before the end lets core's connection go too.
    abortSignalOf(request).addEventListener('abort', flow.cancel, { once: true })
  }

  enqueue(piece: Uint8Array): void {
    send(this.conn, this.chunked ? chunkOf(piece) : piece)
    if (!isFlushed(this.conn)) this.resumeOnDrain()
  }

  close(): void {
    if (this.chunked) send(this.conn, LAST_CHUNK)
    answered(this.conn, this.request)
  }

  /** Core failed in the middle of its answer: the client can only learn it from a cut connection. */
  error(): void {
    cutOff(this.conn)
  }

  get desiredSize(): number {
    return isFlushed(this.conn) ? 1 : 0
  }

  /** The exchange failed before core answered: the relay's 502, 503 or 504. */
  fail(error: unknown): void {
    void writeResponse(this.conn, this.request, gatewayError(error))
  }

  /** Core's connection is paused while the client is behind: it reads again once the client has taken what was written. */
  private resumeOnDrain(): void {
    if (this.resuming || !this.flow) return
    this.resuming = true
    flushed(this.conn).then(() => {
      this.resuming = false
      this.flow!.resume()
    })
  }
}

/** A Response (the relay's own answer, the script, or core's through the Web path) written to the client. */
export async function writeResponse(conn: ClientConnection, request: ClientRequest, response: Response): Promise<void> {
  if (conn.closed || conn.request !== request) return void response.body?.cancel().catch(() => {})
  const bodyless = request.head.method === 'HEAD' || response.status === 204 || response.status === 304
  let text = statusLine(response.status, response.statusText)
  let length: string | null = null
  let date = false
  response.headers.forEach((value, name) => {
    if (name === 'connection' && value.toLowerCase() === 'close') request.lastOnConnection = true
    if (name === 'date') date = true
    if (name === 'content-length') length = value
    else if (!isDroppedResponseHeader(name)) text += `${name}: ${value}${CRLF}`
  })
  // RFC 9110 §6.6.1: an answer the relay makes itself carries the date it was made.
  if (!date) text += `date: ${new Date().toUTCString()}${CRLF}`
  const reader = bodyless ? null : response.body?.getReader()
  if (bodyless) void response.body?.cancel().catch(() => {})
  if (!reader) {
    text += bodyless ? (length !== null ? `content-length: ${length}${CRLF}` : '') : `content-length: 0${CRLF}`
    send(conn, Buffer.from(text + connectionField(conn, request) + CRLF, 'latin1'))
    return answered(conn, request)
  }
  try {
    // A body whose size is not said is read a step ahead: all of it in one piece (the relay's own
    // answers) goes out with its length, anything longer chunked.
    const first = length === null ? await reader.read() : null
    const second = first && !first.done ? await reader.read() : null
    const whole = first && (first.done || second!.done) ? (first.value ?? new Uint8Array(0)) : null
    let chunked = false
    if (length !== null) text += `content-length: ${length}${CRLF}`
    else if (whole) text += `content-length: ${whole.byteLength}${CRLF}`
    else if (request.head.http10) request.lastOnConnection = true
    else {
      chunked = true
      text += `transfer-encoding: chunked${CRLF}`
    }
    if (conn.closed || conn.request !== request) return void reader.cancel().catch(() => {})
    send(conn, Buffer.from(text + connectionField(conn, request) + CRLF, 'latin1'))
    const frame = (piece: Uint8Array) => send(conn, chunked ? chunkOf(piece) : piece)
    if (whole) frame(whole)
    else if (first) [first.value!, second!.value!].forEach(frame)
    if (!whole) {
      for (;;) {
        await flushed(conn)
        if (conn.closed) return void reader.cancel().catch(() => {})
        const { done, value } = await reader.read()
        if (done) break
        frame(value)
      }
      if (chunked) send(conn, LAST_CHUNK)
    }
    answered(conn, request)
  } catch {
    // The answer failed midway (core cut it off, or went silent past the timeout): the client can
    // only learn it from a cut connection.
    cutOff(conn)
  }
}

/** The relay's own error answer, in WIRE.md's shape. */
export const writeError = (conn: ClientConnection, request: ClientRequest, code: RelayErrorCode, message: string, headers?: Record<string, string>) =>
  writeResponse(conn, request, errorResponse(code, message, headers))
