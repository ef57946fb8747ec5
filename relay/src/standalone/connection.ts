import type { Socket } from 'bun'
import type { RelayErrorCode } from '../errors.ts'
import { writeError } from './answer.ts'
import { forwardShort, shortWay, type Forwarding } from './forward.ts'
import { flushed, sendContinue, wakeDrainWaiters } from './output.ts'
import { parseRequestHead, RequestError, type RequestHead } from './request-parser.ts'
import type { ClientConnection, ClientRequest } from './state.ts'
import { forwardWeb } from './web.ts'

/**
 * A client connection's life in the standalone server: bytes in, a head parsed, its body read (whole
 * for the short way, as a stream for the Web path), the request forwarded, and once its answer is
 * written the next request, or the connection's end.
 */

/** Bytes a client may send ahead (pipelined requests) while one is answered, before reading pauses. */
const MAX_PENDING_BYTES = 64 * 1024

export function opened(socket: Socket<ClientConnection>, forwarding: Forwarding): ClientConnection {
  return { socket, forwarding, address: socket.remoteAddress || null, pending: null, request: null, backlog: null, drainWaiters: [], paused: false, closed: false, stopping: false, ending: false, heardAt: 0 }
}

export function onData(conn: ClientConnection, data: Buffer): void {
  if (conn.ending) return // answered for the last time: nothing more is read as a request
  const intake = conn.request?.body
  if (intake && !intake.done) {
    const rest = intake.take(data)
    if (!rest) return
    data = rest
  }
  conn.pending = conn.pending ? Buffer.concat([conn.pending, data]) : data
  if (!conn.request) return readRequests(conn)
  if (conn.pending.byteLength > MAX_PENDING_BYTES) pauseReading(conn)
}

/** Parses and starts the requests waiting in `pending`, one at a time. */
function readRequests(conn: ClientConnection): void {
  while (!conn.request && conn.pending && !conn.closed && !conn.ending) {
    let parsed
    try {
      parsed = parseRequestHead(conn.pending)
    } catch (error) {
      return refuse(conn, error)
    }
    if (!parsed) return
    const rest = parsed.bytes < conn.pending.byteLength ? conn.pending.subarray(parsed.bytes) : null
    conn.pending = null
    begin(conn, parsed.head, rest)
  }
}

function begin(conn: ClientConnection, head: RequestHead, rest: Buffer | null): void {
  const request: ClientRequest = { head, body: null, lastOnConnection: !head.keepAlive || conn.stopping, aborter: null }
  conn.request = request
  const { forwarding } = conn
  const way = shortWay(forwarding, head)
  const length = head.contentLength ?? 0
  // A body on the wire is the client's framing even when nothing reads it (a GET's, or one refused
  // before it is read): swallowed, never parsed as the next request, and the connection ends with
  // the answer. Set before the request goes anywhere, since a refusal may be answered at once;
  // whatever reads the body puts its own reader in place of this one.
  if (head.chunked || length > 0) request.body = { done: false, take: () => null }
  if (way && length === 0) forwardShort(forwarding, conn, request, way, null)
  else if (way) readWhole(request, length, (body) => forwardShort(forwarding, conn, request, way, body))
  else forwardWeb(forwarding, conn, request)
  const body = request.body
  if (rest) {
    const after = body && !body.done ? body.take(rest) : rest
    if (after) conn.pending = conn.pending ? Buffer.concat([conn.pending, after]) : after
  }
  if (way && body && !body.done && head.expectContinue) sendContinue(conn)
  if (conn.pending && conn.pending.byteLength > MAX_PENDING_BYTES && conn.request) pauseReading(conn)
}

/** A body of declared length read whole, then handed on. */
function readWhole(request: ClientRequest, length: number, then: (body: Uint8Array) => void): void {
  const parts: Buffer[] = []
  let left = length
  request.body = {
    done: false,
    take(data) {
      const used = Math.min(left, data.byteLength)
      parts.push(used === data.byteLength ? data : data.subarray(0, used))
      left -= used
      if (left === 0) {
        this.done = true
        then(parts.length === 1 ? parts[0] : Buffer.concat(parts))
      }
      return used < data.byteLength ? data.subarray(used) : null
    },
  }
}

/** The request's answer is written: the next one pipelined behind it starts, or the connection ends. */
export function answered(conn: ClientConnection, request: ClientRequest): void {
  if (conn.request !== request) return
  conn.request = null
  if (request.lastOnConnection) {
    conn.ending = true
    conn.pending = null
    return void flushed(conn).then(() => conn.closed || conn.socket.end())
  }
  resumeReading(conn)
  // Not from inside this call: a long run of pipelined requests answered at once would nest deeper each time.
  if (conn.pending) queueMicrotask(() => readRequests(conn))
}

const REFUSAL_CODE: Record<RequestError['status'], RelayErrorCode> = {
  400: 'bad_request',
  417: 'expectation_failed',
  431: 'headers_too_large',
  501: 'unsupported_transfer_coding',
  505: 'http_version_not_supported',
}

const REFUSED_HEAD: RequestHead = { method: 'GET', target: '', http10: false, headers: [], host: null, contentLength: null, chunked: false, keepAlive: false, expectContinue: false }

/** A head that cannot be read: its error, and the connection ends (where the next request would begin is unknown). */
function refuse(conn: ClientConnection, error: unknown): void {
  conn.pending = null
  const request: ClientRequest = { head: REFUSED_HEAD, body: null, lastOnConnection: true, aborter: null }
  conn.request = request
  const refusal = error instanceof RequestError ? error : new RequestError(400, 'the request could not be read')
  void writeError(conn, request, REFUSAL_CODE[refusal.status], refusal.message)
}

/** Ends the connection at once: an answer that failed midway must not look complete. */
export function cutOff(conn: ClientConnection): void {
  if (!conn.closed) conn.socket.terminate()
}

export function pauseReading(conn: ClientConnection): void {
  if (conn.paused || conn.closed) return
  conn.paused = true
  conn.socket.pause()
}

export function resumeReading(conn: ClientConnection): void {
  if (!conn.paused || conn.closed) return
  conn.paused = false
  conn.socket.resume()
}

/** The client went away: what waits on it hears so (core's exchange is aborted, writers stop). */
export function onClosed(conn: ClientConnection): void {
  if (conn.closed) return
  conn.closed = true
  conn.backlog = null
  conn.pending = null
  const request = conn.request
  conn.request = null
  request?.aborter?.abort()
  request?.body?.abandon?.()
  wakeDrainWaiters(conn)
}
