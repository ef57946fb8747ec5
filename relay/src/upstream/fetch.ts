import { UpstreamError } from '../errors.ts'
import { withoutDroppedHeaders } from '../headers.ts'
import { deadlines, type IdleDeadline } from './deadlines.ts'
import { fetchSlots } from './fetch-slots.ts'
import type { SlotLimits } from './slots.ts'
import type { UpstreamClient, UpstreamRequest } from './types.ts'

export interface FetchClientOptions extends SlotLimits {
  /** The `fetch` to send with (default: the runtime's). */
  fetch?: typeof fetch
}

/**
 * The Web-standard client: `fetch`, which keeps upstream connections alive on every runtime that
 * has it (Bun, Deno, Node's undici, workers). Redirects are returned, never followed: the relay
 * talks to the configured upstream and nothing else. At most `maxConnections` exchanges are in
 * flight to one upstream, the rest wait in a queue of at most `maxQueued` (fetch-slots.ts).
 */
export function fetchClient({ fetch: fetchImpl = fetch, ...limits }: FetchClientOptions = {}): UpstreamClient {
  const timeouts = deadlines()
  const slots = fetchSlots(limits, timeouts)
  // An exchange holds its slot until it ends: when it fails, at once for an answer without a body,
  // else when that body ends (read to its end, failed or cancelled: boundedBody).
  const send = async (request: UpstreamRequest): Promise<Response> => {
    const waiting = slots.take(request)
    if (waiting) await waiting
    let holdsSlot = true
    const free = () => {
      if (holdsSlot) slots.free(request.origin)
      holdsSlot = false
    }
    try {
      const response = await exchange(request, free)
      if (!response.body) free()
      return response
    } catch (error) {
      free()
      throw error
    }
  }

  const exchange = async (request: UpstreamRequest, ended: () => void): Promise<Response> => {
    const controller = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    let answered = false
    // The timeout restarts with each piece of a streamed body: a slow upload is the client's pace.
    const arm = () => {
      clearTimeout(timer)
      if (answered) return
      timer = setTimeout(() => controller.abort(new UpstreamError('timeout', `core did not answer within ${request.timeoutMs} ms`)), request.timeoutMs)
    }
    arm()
    const body =
      request.body instanceof ReadableStream
        ? request.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ transform: (chunk, out) => (arm(), out.enqueue(chunk)), flush: arm }))
        : request.body
    const onClientGone = () => controller.abort(new UpstreamError('aborted', 'the client went away'))
    request.signal?.addEventListener('abort', onClientGone, { once: true })
    if (request.signal?.aborted) onClientGone()
    // fetch sets Content-Length itself for bytes; a stream keeps the client's declared size.
    const headers: [string, string][] = request.contentLength !== null && body instanceof ReadableStream ? [...request.headers, ['content-length', String(request.contentLength)]] : [...request.headers]
    // A client that sent no User-Agent: fetch would add the runtime's own ("node", "Bun/1.4.5"), and
    // core would record the relay as the client's browser. An empty one is sent as empty.
    if (!headers.some(([name]) => name.toLowerCase() === 'user-agent')) headers.push(['user-agent', ''])
    try {
      const response = await fetchImpl(request.origin + request.target, {
        method: request.method,
        headers,
        body: body as BodyInit | null,
        signal: controller.signal,
        redirect: 'manual',
        // Required by the standard for a streamed request body.
        duplex: 'half',
      } as RequestInit & { duplex: 'half' })
      // A transfer coding other than chunked is not decoded by fetch, and the field is hop-by-hop
      // (dropped): the client got gzip bytes labelled plain. Refused, as the socket client does.
      const coding = response.headers.get('transfer-encoding')
      if (coding !== null && coding.trim().toLowerCase() !== 'chunked') {
        await response.body?.cancel().catch(() => {})
        throw new UpstreamError('refused', `core's answer has a transfer coding the relay does not decode: ${coding}`)
      }
      if (!response.body) return withoutDroppedHeaders(response)
      // The wait for the head is over; what bounds the body is each silence of core's while the
      // client reads (an interim 1xx answer, which fetch keeps to itself, does not restart the wait).
      const stalled = timeouts.idle(request.timeoutMs, () => controller.abort(new UpstreamError('timeout', `core sent nothing for ${request.timeoutMs} ms in the middle of its answer`)))
      return withoutDroppedHeaders(response, boundedBody(response.body, stalled, ended))
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason
      if (error instanceof UpstreamError) throw error
      const cause = (error as { cause?: unknown })?.cause
      if (cause instanceof UpstreamError) throw cause
      throw new UpstreamError('refused', `core could not be reached: ${(error as Error)?.message ?? error}`, { cause: error })
    } finally {
      answered = true
      clearTimeout(timer)
    }
  }
  return send
}

/**
 * The answer's body, failing when core stays silent while the client reads: the deadline runs only
 * while a read of the client's waits on core, not while the client is behind (a slow reader is its
 * own pace). When it passes, the exchange is aborted: the body errors and fetch closes the connection
 * rather than pool it, as for any answer given up mid-body. A pull at a time (no high-water mark):
 * nothing is read from core but for the client. `ended` is called once, when the body is read to
 * its end, fails or is cancelled (it may be called more than once): the exchange is over then.
 */
function boundedBody(body: ReadableStream<Uint8Array>, stalled: IdleDeadline, ended: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>(
    {
      async pull(out) {
        stalled.restart()
        try {
          const { done, value } = await reader.read()
          if (done) {
            ended()
            out.close()
          } else out.enqueue(value)
        } catch (error) {
          ended()
          throw error
        } finally {
          stalled.stop()
        }
      },
      cancel(reason) {
        stalled.stop()
        ended()
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}
