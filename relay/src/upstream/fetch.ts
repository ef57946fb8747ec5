import { UpstreamError } from '../errors'
import { withoutDroppedHeaders } from '../headers'
import type { UpstreamClient } from './types'

/**
 * The Web-standard client: `fetch`, which keeps upstream connections alive on every runtime that
 * has it (Bun, Deno, Node's undici, workers). Redirects are returned, never followed: the relay
 * talks to the configured upstream and nothing else.
 */
export function fetchClient(fetchImpl: typeof fetch = fetch): UpstreamClient {
  return async (request) => {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(new UpstreamError('timeout', `core did not answer within ${request.timeoutMs} ms`)), request.timeoutMs)
    const onClientGone = () => controller.abort(new UpstreamError('aborted', 'the client went away'))
    request.signal?.addEventListener('abort', onClientGone, { once: true })
    if (request.signal?.aborted) onClientGone()
    // fetch sets Content-Length itself for bytes; a stream keeps the client's declared size.
    const headers: [string, string][] = request.contentLength !== null && !(request.body instanceof Uint8Array) ? [...request.headers, ['content-length', String(request.contentLength)]] : request.headers
    try {
      const response = await fetchImpl(request.origin + request.target, {
        method: request.method,
        headers,
        body: request.body as BodyInit | null,
        signal: controller.signal,
        redirect: 'manual',
        // Required by the standard for a streamed request body.
        duplex: 'half',
      } as RequestInit & { duplex: 'half' })
      return withoutDroppedHeaders(response)
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason
      if (error instanceof UpstreamError) throw error
      const cause = (error as { cause?: unknown })?.cause
      if (cause instanceof UpstreamError) throw cause
      throw new UpstreamError('refused', `core could not be reached: ${(error as Error)?.message ?? error}`, { cause: error })
    } finally {
      clearTimeout(timer)
    }
  }
}
