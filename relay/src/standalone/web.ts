import { FORBIDDEN_METHODS, targetUrl } from '../paths.ts'
import { writeError, writeResponse } from './answer.ts'
import { pauseReading, resumeReading } from './connection.ts'
import { abortSignalOf, type Forwarding } from './forward.ts'
import { sendContinue } from './output.ts'
import { ChunkedDecoder, RequestError } from './request-parser.ts'
import type { BodyIntake, ClientConnection, ClientRequest } from './state.ts'

/**
 * The Web path of the standalone server: the request made into a Request, its body a stream read
 * off the connection as the relay pulls it (the socket pauses while the relay is behind), answered
 * by the relay exactly as every adapter's request is.
 */

export function forwardWeb(forwarding: Forwarding, conn: ClientConnection, request: ClientRequest): void {
  const { head } = request
  const url = targetUrl('http', head.host ?? '', head.target)
  if (url === null) return void writeError(conn, request, 'bad_request', 'the request target or Host is not a URL')
  if (FORBIDDEN_METHODS.has(head.method)) return void writeResponse(conn, request, forwarding.relay.refusal(head.method, url.pathname)!)
  const hasBody = head.method !== 'GET' && head.method !== 'HEAD' && (head.chunked || (head.contentLength ?? 0) > 0)
  const body = hasBody ? bodyStream(conn, request) : null
  const headers = head.host === null ? [...head.headers, ['host', ''] as [string, string]] : head.headers
  let incoming: Request
  try {
    incoming = new Request(url, { method: head.method, headers, body, signal: abortSignalOf(request), duplex: 'half' } as RequestInit)
  } catch {
    return void writeError(conn, request, 'bad_request', 'the request could not be read')
  }
  forwarding.relay(incoming, { address: conn.address }).then(
    (response) => {
      // The relay saw only a body that stopped (499, or 502 once core had part of it): the client is told why.
      const failure = request.body?.failure
      if (!failure) return writeResponse(conn, request, response)
      void response.body?.cancel().catch(() => {})
      return writeError(conn, request, 'bad_request', `the request body could not be read: ${failure.message}`)
    },
    () => writeError(conn, request, 'upstream_unreachable', 'core could not be reached; retry later', { 'retry-after': '5' }),
  )
}

/**
 * The body as a stream fed from the connection, framed by its Content-Length or chunked. Pieces
 * the relay has not pulled yet are held up to one; past that the socket pauses until it pulls.
 * `100 Continue` goes out when the relay first pulls, so a body it refuses unread (413) is never sent.
 */
function bodyStream(conn: ClientConnection, request: ClientRequest): ReadableStream<Uint8Array> {
  const { head } = request
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let continued = !head.expectContinue
  let left = head.contentLength ?? 0
  let cancelled = false
  const decoder = head.chunked ? new ChunkedDecoder() : null
  const intake: BodyIntake = {
    done: false,
    take(data) {
      if (cancelled) return null
      let rest: Buffer | null = null
      try {
        if (decoder) {
          const result = decoder.push(data)
          for (const piece of result.pieces) controller.enqueue(piece)
          intake.done = result.done
          rest = result.rest && result.rest.byteLength > 0 ? Buffer.from(result.rest.buffer, result.rest.byteOffset, result.rest.byteLength) : null
        } else {
          const used = Math.min(left, data.byteLength)
          controller.enqueue(data.subarray(0, used))
          left -= used
          intake.done = left === 0
          rest = used < data.byteLength ? data.subarray(used) : null
        }
      } catch (error) {
        // Framing the relay cannot follow: the body fails, and nothing after it on this connection can be trusted.
        request.lastOnConnection = true
        intake.done = true
        intake.failure = error instanceof RequestError ? error : new RequestError(400, 'the request body could not be read')
        controller.error(intake.failure)
        return null
      }
      // Pieces the relay has not asked for yet wait in the stream, and reading pauses until it does
      // (its next read pulls). Framing alone, or a piece handed to a read waiting for it, leaves it running.
      if (intake.done) controller.close()
      else if ((controller.desiredSize ?? 0) < 0) pauseReading(conn)
      return rest
    },
  }
  intake.abandon = () => {
    if (intake.done || cancelled) return
    intake.done = true
    controller.error(new RequestError(400, 'the client went away before the end of its body'))
  }
  request.body = intake
  // A high-water mark of 0: nothing is pulled before the relay reads (the default of 1 pulled at
  // once, and sent `100 Continue` for a body the relay then refused unread with 413).
  return new ReadableStream<Uint8Array>(
    {
      start(made) {
        controller = made
      },
      pull() {
        if (!continued) {
          continued = true
          sendContinue(conn)
        }
        resumeReading(conn)
      },
      cancel() {
        // The relay wants no more of it: the rest is dropped as it comes, and the connection ends with the answer.
        cancelled = true
        request.lastOnConnection = true
        resumeReading(conn)
      },
    },
    { highWaterMark: 0 },
  )
}
