import type { Logger } from './log'
import { json } from './storage'
import type { Clock, FetchFunction, PageWindow } from './types'

/** What the browser lets a beacon (or a keepalive fetch) carry, with room to spare under its 64 KB. */
export const BEACON_MAX_BYTES = 60_000
/** Bodies smaller than this are not worth compressing. */
const GZIP_MIN_CHARS = 1024
/**
 * A compression not done by then (a stream some browsers and extensions leave stalled) is given up:
 * the body goes as it is, once (see connection.js's gzip).
 */
export const GZIP_TIMEOUT_MS = 1000
/**
 * A probe not answered by then is given up: the service is taken for unreachable (a server that takes
 * the connection and never answers would otherwise hold the send that asked, and a drain behind it,
 * for as long as the page is open). Timed by the tracker's clock, as requests are. Used by connection.js,
 * but kept here: the script-tag bundle lists every export of a module it loads on demand.
 */
export const PROBE_TIMEOUT_MS = 10_000
/**
 * A request the service has not answered by then is given up, and retried like a failed one: a
 * service that takes connections but never answers would otherwise have the page hold every
 * request, one more every few seconds, for as long as the browser waits.
 */
export const REQUEST_TIMEOUT_MS = 30_000
/**
 * Fetch with the key header is taken for blocked after this many failures in a row, each while the
 * service answered the probe: one alone is as likely a blip of the network. In a row: a failure counts
 * only for a send started after the previous counted one, so sends failing together count once.
 */
export const BLOCKED_AFTER_FAILURES = 3
/** Once taken for blocked, fetch with the key header is tried again this long on (a block may go). */
export const BLOCKED_RETRY_MS = 10 * 60_000

/**
 * A gateway's own answers (the relay's `upstream_unreachable` and `upstream_timeout`, a proxy's or
 * CDN's): the service behind it did not answer. The service itself never gives them.
 */
const serviceAnswered = (status: number) => status != 502 && status != 504

export interface Answer {
  /** The HTTP status; 0 when the request did not get through; 202 when a beacon was handed over. */
  status: number
  /** The JSON answer, when there is one to read. */
  data?: Record<string, unknown> | null
  retryAfter?: string | null
  /** The browser refused the payload as too large for a beacon (not the server). */
  local?: boolean
  /** No answer within REQUEST_TIMEOUT_MS. */
  timedOut?: boolean
}

export type Transport = ReturnType<typeof createTransport>

/** What `use` returns, given a signal that aborts after `ms` by the tracker's clock, whose timer ends with it. */
export async function timed<T>(clock: Clock, ms: number, use: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = new AbortController()
  const timer = clock.setTimeout(() => timeout.abort(), ms)
  try {
    return await use(timeout.signal)
  } finally {
    clock.clearTimeout(timer)
  }
}

/**
 * One attempt at one request. Normally `fetch` with `Authorization`. On unload, and once that fetch
 * has been seen blocked while the service is reachable (sticky-beacon: a proxy or CORS setup that
 * refuses the preflight), by beacon: `navigator.sendBeacon` with the key in the body, a
 * text/plain JSON string or gzipped bytes with no type, CORS-simple either way (`fetch` with
 * `keepalive` where beacons are missing). In sticky mode, what a beacon cannot carry goes as a
 * CORS-simple fetch, the key in the body too: over BEACON_MAX_BYTES (the full snapshot of a long
 * page), or refused by the browser (its quota for beacons in flight), and what was kept in the
 * outbox; that answer is read, so 413 halving, 429 and 5xx retries work for it. Bodies are gzipped,
 * said in the query, when `CompressionStream` exists, they are worth it and the send may wait (not
 * on unload).
 * Arguments in a row, not one object of them: the bundle keeps no names for them (about 20 B gzipped).
 */
export function createTransport(
  base: string,
  apiKey: string,
  fetch: FetchFunction,
  win: PageWindow,
  log: Logger,
  clock: Clock,
  /** connection.js (gzip, the reachability probe), imported when first needed. */
  later: () => Promise<typeof import('./connection')>,
) {
  /** Failures in a row of fetch with the key header while the service answered. */
  let failures = 0
  /** Sends started so far; and how many had started when the latest failure was counted. */
  let started = 0
  let counted = 0
  /** When that fetch was last taken for blocked; 0 while it works. */
  let blockedAt = 0
  /** Whether the service answered the latest request or probe. */
  let answering = true
  /** A compression stream stalled, or there is none: the page's sends go uncompressed from then on. */
  let stalled = false
  /**
   * Bytes of this page's keepalive fetches (beacons where `sendBeacon` is missing) in flight. Browsers
   * refuse a keepalive request that would take those of the page past 64 KB, and say so only later,
   * in a task an unloading page never runs: one not handed over is kept, as a refused beacon is.
   */
  let keptAlive = 0
  const online = () => win.navigator.onLine !== false

  /** The body as JSON with the key in it, for requests that cannot carry a header. */
  const withKey = (body: object) => json({ ...body, apiKey })
  /**
   * A send's URL and body, gzipped (by connection.js, loaded then) when it is worth it and
   * `CompressionStream` exists. The query says gzip: a simple request cannot say Content-Encoding (it
   * would need a preflight). A polyfill that throws, whose stream errors or stalls (GZIP_TIMEOUT_MS),
   * or a module that cannot be loaded, sends it as it is: a failed compression is no failed request.
   * One that stalled once, or found no `CompressionStream`, is not tried again on this page.
   */
  const encode = async (path: string, text: string): Promise<[url: string, body: string | ArrayBuffer]> => {
    try {
      if (!stalled && text.length >= GZIP_MIN_CHARS) {
        const gzipped = await (await later()).gzip(win, text)
        if (gzipped) return [base + path + '?compression=gzip', gzipped]
        stalled = true
      }
    } catch {}
    return [base + path, text]
  }

  /**
   * fetch, the key in the Authorization header; or `simple`: the key in a text/plain body, a
   * CORS-simple request that needs no preflight. Status 0 when it does not get through.
   */
  const post = (path: string, body: object, simple = false): Promise<Answer> =>
    timed(clock, REQUEST_TIMEOUT_MS, async (signal) => {
      try {
        const [url, payload] = await encode(path, simple ? withKey(body) : json(body))
        const headers: Record<string, string> = simple ? {} : { Authorization: 'Bearer ' + apiKey, 'Content-Type': 'application/json' }
        const response = await fetch(url, { method: 'POST', headers, body: payload, signal })
        answering = serviceAnswered(response.status)
        return { status: response.status, data: await response.json().catch(() => null), retryAfter: response.headers.get('retry-after') }
      } catch {
        if (!signal.aborted) return { status: 0 }
        answering = false
        return { status: 0, timedOut: true }
      }
    })

  /**
   * Whether the service answers at all: a no-cors GET that nothing but the network can fail (see
   * connection.js's probe, given up after PROBE_TIMEOUT_MS), or a gateway in front of the service that
   * says it got no answer (502, 504).
   */
  async function reachable(): Promise<boolean> {
    try {
      // Opaque (status 0) from another origin: it answered.
      return (answering = serviceAnswered(await (await later()).probe(fetch, base, clock)))
    } catch {
      return (answering = false)
    }
  }

  /**
   * By beacon, the key in the body: 202 once handed over, 0 when the browser refuses it (or a
   * `sendBeacon` the page or an extension replaced throws), a local 413 over BEACON_MAX_BYTES. With
   * `unload`, uncompressed (compressing is asynchronous) and synchronous until handed over, so it runs
   * to completion inside a `pagehide` handler.
   */
  async function beacon(path: string, body: object, unload?: boolean): Promise<Answer> {
    const text = withKey(body)
    const [url, payload] = unload ? [base + path, text] : await encode(path, text)
    const size = new Blob([payload]).size
    if (size > BEACON_MAX_BYTES) return { status: 413, local: true }
    let handed: unknown
    try {
      // Without sendBeacon, fetch with keepalive: handed over, its answer not awaited; not past the
      // browser's quota for keepalive bodies in flight, which refuses it only later, unseen (see keptAlive).
      handed =
        win.navigator.sendBeacon?.(url, payload) ??
        (keptAlive + size <= BEACON_MAX_BYTES && (fetch(url, { method: 'POST', body: payload, keepalive: true }).catch(() => {}).finally(() => (keptAlive -= size)), (keptAlive += size)))
    } catch {}
    return { status: handed ? 202 : 0 }
  }

  /**
   * Sticky: by beacon; as a CORS-simple fetch what a beacon cannot carry (too large, or refused), and
   * (`read`) what must be seen stored: a beacon handed over would have it deleted from the outbox unseen.
   */
  const sendSticky = async (path: string, body: object, read?: boolean): Promise<Answer> =>
    !read && (await beacon(path, body)).status === 202 ? { status: 202 } : post(path, body, true)

  return {
    post,
    reachable,
    online,
    get blocked() {
      return !!blockedAt
    },
    /**
     * False once a fetch and then the health probe got no answer while online: the service is down,
     * or a blocklist stops every request to its origin (from the page the two look the same); or once
     * a gateway (the relay) answered 502 or 504 for it: down.
     */
    get answering() {
      return answering
    },
    /** One attempt, by the way this page's sends currently go; `read`: not by beacon (see sendSticky). */
    async send(path: string, body: object, unload = false, read = false): Promise<Answer> {
      if (unload) return beacon(path, body, true)
      if (blockedAt && clock.now() - blockedAt < BLOCKED_RETRY_MS) return sendSticky(path, body, read)
      const sequence = ++started
      const result = await post(path, body)
      if (result.status) failures = blockedAt = 0
      // A blocked fetch fails at once; one that timed out reached a service too slow to answer. Once
      // blocked, `failures` stays: one more failure, BLOCKED_RETRY_MS on, is a block again.
      if (result.status || result.timedOut || sequence <= counted || !online()) return result
      counted = started
      if (!(await reachable()) || ++failures < BLOCKED_AFTER_FAILURES) return result
      if (!blockedAt) log.warn(`fetch to ${base} is blocked; sending by beacon from now on`)
      blockedAt = clock.now()
      return sendSticky(path, body, read)
    },
  }
}
