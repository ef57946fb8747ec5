import { API } from '../config'
import { patch, type Undo } from '../dom'
import { randomHex, uuid } from '../ids'
import { URL_IN_TEXT, withoutCredentials, withoutQuery } from '../urls'
import type { AutoContext } from '.'

/** A request slower than this is reported even when it succeeds. */
export const SLOW_REQUEST_MS = 3000

/** WIRE.md's `/network` item (fielded). */
export interface NetworkErrorEntry {
  requestId: string
  url: string
  method: string
  status: number | null
  statusText: string | null
  duration: number
  timestampMs: number
  startTimeMs: number
  errorType: 'network' | 'http' | 'slow'
  errorMessage: string | null
  errorName?: string
}

/** WIRE.md's span, for `/spans/batch`. */
export interface SpanEntry {
  traceId: string
  spanId: string
  name: string
  kind: 'client'
  startTimeMs: number
  endTimeMs: number
  status: { code: 'unset' | 'ok' | 'error'; message?: string }
  attributes: Record<string, unknown>
}

/** An XMLHttpRequest ends with loadend, which follows abort when the page aborted it. */
const XHR_ENDS = ['abort', 'loadend']

/**
 * Every `fetch` and `XMLHttpRequest` of the page becomes a client span, and the failed (network error
 * or status >= 400) or slow ones a network error. One the page aborted did not fail: its span's status
 * is unset, and it is no network error. The tracker's own requests never: it sends with the fetch it
 * had before this wrapper, and its URLs are skipped here as well.
 */
export function trackNetwork(context: AutoContext, network: boolean, spans: boolean): Undo[] {
  const { win } = context
  // The tracker's own requests, by their routes: the base may be the page's own origin (a relay
  // mounted at its root), and the page's requests there are the page's.
  const own = [context.base + API + '/', context.base + '/health/']
  /**
   * Reports a request as the page gave it, to fetch or to an XMLHttpRequest's open: its input (a URL as
   * text or an object, or a Request) and init, read here, when it has ended, where nothing throws into the
   * page (what fetch rejects, a method that cannot become text or a getter that throws, would throw at its call).
   * Typed as a Request, what it may be: of a URL, text or another object, what it reads is undefined.
   */
  const report = (request: Partial<Request> | undefined, init: RequestInit | undefined, start: number, status: number | null, statusText: string | null, failure?: { name?: string; message?: string }) => {
    // Reporting runs inside the page's own request promise chain: it must never throw into it.
    try {
      statusText ||= null
      // What the browser takes, too: `fetch(undefined)` fetches ./undefined (it never throws, it rejects).
      // An empty method, which fetch rejects, is no method core takes: reported as fetch's default.
      const method = String(init?.method || request?.method || 'GET').toUpperCase()
      const url = withoutQuery(request?.url ?? String(request), win.document.baseURI)
      // An abort rejects with its signal's reason (which is none before), whatever the page gave it
      // (`abort('superseded')`, a library's cancel error); only `AbortSignal.timeout`'s, a TimeoutError, is a failure.
      if (failure && failure === (init?.signal ?? request?.signal)?.reason && failure.name != 'TimeoutError') failure = { name: 'AbortError' }
      // Not what never crosses the network: a `data:` URL is its content (a photo being uploaded, say).
      if (!url.startsWith('http') || own.some((prefix) => url.startsWith(prefix))) return
      // The page's clock may have been set back meanwhile (a time sync); the service refuses a span
      // that ends before it starts.
      const end = Math.max(context.now(), start)
      const aborted = failure?.name == 'AbortError'
      const failed = status == null || status >= 400
      // Some of the browser's messages repeat the URL as the page gave it, credentials, query and all.
      const message = failed ? withoutCredentials((failure?.message ?? `HTTP ${status}${statusText ? ' ' + statusText : ''}`).replace(URL_IN_TEXT, (found) => withoutQuery(found, found))) : null
      if (spans) {
        context.report('/spans/batch', 'spans', {
          traceId: randomHex(16),
          spanId: randomHex(8),
          name: `${method} ${new URL(url).pathname}`,
          kind: 'client',
          startTimeMs: start,
          endTimeMs: end,
          status: aborted ? { code: 'unset' } : failed ? { code: 'error', message: message! } : { code: 'ok' },
          attributes: { 'http.method': method, 'http.url': url, 'http.status_code': status },
        } satisfies SpanEntry, false)
      }
      if (network && !aborted && (failed || end - start > SLOW_REQUEST_MS)) {
        context.report('/network', 'errors', {
          requestId: uuid(end),
          url,
          method,
          status,
          statusText,
          duration: end - start,
          timestampMs: end,
          startTimeMs: start,
          errorType: status == null ? 'network' : failed ? 'http' : 'slow',
          errorMessage: message,
          errorName: failure?.name,
        } satisfies NetworkErrorEntry)
      }
    } catch {}
  }

  const undo = [
    patch(win, 'fetch', (original) =>
      function (this: unknown, input: RequestInfo | URL, init?: RequestInit) {
        const start = context.now()
        return original.apply(this, arguments as unknown as [RequestInfo, RequestInit]).then(
          (response) => {
            report(input as Request, init, start, response.status, response.statusText)
            return response
          },
          (error: Error) => {
            report(input as Request, init, start, null, null, error)
            throw error
          },
        )
      } as typeof fetch,
    ),
  ]

  // Each request of an XMLHttpRequest once, when it is done: at its abort or loadend, or, when the page
  // opens the object again in its own handler of the end (a retry), there: Chromium fires that loadend
  // only after the next send, while the object is not done. Opened again under way, a request ends with
  // no event. (An abort is this request's, whatever the state: happy-dom's is unsent by then.) This
  // tracker's own key, and listener: those of one stopped before report nothing.
  const REQUEST = Symbol()
  type TrackedXhr = XMLHttpRequest & { [REQUEST]?: [url: unknown, init: RequestInit, start?: number] }
  const ended = function (this: TrackedXhr, event?: Event) {
    const request = this[REQUEST]
    const aborted = event?.type == 'abort'
    if ((this.readyState > 3 || aborted) && request?.[2]) {
      report(...(request as [Request, RequestInit, number]), this.status || null, this.statusText, this.status ? undefined : { name: aborted ? 'AbortError' : 'NetworkError', message: 'the request failed' })
      request[2] = 0
    }
  }
  const xhr = (win as { XMLHttpRequest?: typeof XMLHttpRequest }).XMLHttpRequest?.prototype as TrackedXhr | undefined
  if (xhr) {
    undo.push(
      patch(xhr, 'open', (original) =>
        function (this: TrackedXhr, method: string, url: string | URL) {
          ended.call(this)
          this[REQUEST] = [url, { method }]
          // All it was given: an open's user and password go on as they were, and so does their absence.
          return (original as (...args: unknown[]) => void).apply(this, arguments as unknown as unknown[])
        } as XMLHttpRequest['open'],
      ),
      patch(xhr, 'send', (original) =>
        function (this: TrackedXhr, body?: Document | XMLHttpRequestBodyInit | null) {
          const request = this[REQUEST]
          // Not if it was sent already: that send throws, and the request under way goes on.
          const sending = request && request[2] === undefined
          if (sending) {
            request[2] = context.now()
            // Added again, the same listener is not added twice.
            XHR_ENDS.forEach((type) => this.addEventListener(type, ended))
          }
          try {
            original.call(this, body)
          } catch (error) {
            // Not sent (sent already, or never opened); or a synchronous request that failed, which
            // throws here with no loadend to come: it has ended.
            if (sending) ended.call(this), (request[2] = undefined)
            throw error
          }
        },
      ),
    )
  }
  return undo
}
