import { gunzipSync } from 'node:zlib'
import type { FetchFunction, PageWindow } from '@sightline/tracker'

/** One request as the service would receive it. */
export interface Sent {
  via: 'fetch' | 'beacon' | 'keepalive'
  url: string
  /** The path under the base, e.g. "/api/ingestion/events". */
  path: string
  query: string
  headers: Record<string, string>
  /** The decoded text (gunzipped when it was compressed). */
  text: string
  body: any
  compressed: boolean
}

/** An answer; a network error; or none at all (the request waits until the page gives up on it). */
export type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | 'network-error' | 'no-answer'

/** What fetch does with a request that is never answered: it fails when its signal aborts. */
const noAnswer = (signal: AbortSignal | null | undefined) =>
  new Promise<never>((_, reject) => {
    const fail = () => reject(new DOMException('The operation was aborted.', 'AbortError'))
    if (signal?.aborted) fail()
    else signal?.addEventListener('abort', fail)
  })

export interface FakeService {
  fetch: FetchFunction
  sent: Sent[]
  /** What was sent to one path (ingestion paths may be given without `/api/ingestion`). */
  to(path: string): Sent[]
  /** Answers every request from now on (default: 200 `{success: true}`). */
  reply(answer: (request: Sent) => Reply | Promise<Reply>): void
  /** Catches `navigator.sendBeacon` of this page (happy-dom's would send it over the network). */
  catchBeacons(win: PageWindow, accept?: (url: string) => boolean): void
  /** Waits until every caught beacon's body has been read into `sent`. */
  beaconsRead(): Promise<void>
}


async function decode(url: string, via: Sent['via'], headers: Record<string, string>, body: unknown): Promise<Sent> {
  const parsed = new URL(url)
  let bytes: Uint8Array
  if (body === undefined || body === null) bytes = new Uint8Array()
  else if (typeof body === 'string') bytes = new TextEncoder().encode(body)
  else if (typeof (body as Blob).arrayBuffer === 'function') bytes = new Uint8Array(await (body as Blob).arrayBuffer())
  else bytes = new Uint8Array(body as ArrayBuffer)
  const compressed = headers['content-encoding'] === 'gzip' || parsed.searchParams.get('compression') === 'gzip'
  const text = new TextDecoder().decode(compressed ? gunzipSync(bytes) : bytes)
  let json: unknown = null
  try {
    json = JSON.parse(text)
  } catch {}
  return { via, url, path: parsed.pathname, query: parsed.search, headers, text, body: json, compressed }
}

/**
 * A stand-in for the service (at SERVICE_BASE in the tests): keeps every request (fetch, beacon, keepalive)
 * and answers as told. The tracker's own sends come here through its injected fetch.
 */
export function fakeService(): FakeService {
  const sent: Sent[] = []
  const beacons: Promise<void>[] = []
  let answer: (request: Sent) => Reply | Promise<Reply> = () => ({ status: 200, body: { success: true } })
  const fetch: FetchFunction = async (input, init = {}) => {
    const url = String(input instanceof Request ? input.url : input)
    const headers = Object.fromEntries(new Headers(init.headers).entries())
    if (init.method !== 'POST') {
      // The reachability probe (GET /health/simple, no-cors).
      const reply = await answer({ via: 'fetch', url, path: new URL(url).pathname, query: '', headers, text: '', body: null, compressed: false })
      if (reply === 'network-error') throw new TypeError('Failed to fetch')
      if (reply === 'no-answer') return noAnswer(init.signal)
      return new Response(null, { status: reply.status })
    }
    const request = await decode(url, init.keepalive ? 'keepalive' : 'fetch', headers, init.body)
    if (!headers['content-type'] && typeof init.body === 'string') request.headers['content-type'] = 'text/plain;charset=UTF-8'
    const reply = await answer(request)
    if (reply === 'network-error') throw new TypeError('Failed to fetch')
    sent.push(request)
    if (reply === 'no-answer') return noAnswer(init.signal)
    return new Response(reply.body === undefined ? null : JSON.stringify(reply.body), { status: reply.status, headers: { 'content-type': 'application/json', ...reply.headers } })
  }
  return {
    fetch,
    sent,
    to: (path) => sent.filter((request) => request.path === path || request.path === '/api/ingestion' + path),
    reply(next) {
      answer = next
    },
    catchBeacons(win, accept = () => true) {
      // Like a browser, sendBeacon says at once whether it took the data; the body is read after.
      win.navigator.sendBeacon = (url: string | URL, data?: BodyInit | null) => {
        if (!accept(String(url))) return false
        const type = typeof data === 'string' ? 'text/plain;charset=UTF-8' : (data as Blob).type
        const pending = decode(String(url), 'beacon', { 'content-type': type }, data).then((beacon) => void sent.push(beacon))
        beacons.push(pending)
        return true
      }
    },
    beaconsRead: () => Promise.all(beacons).then(() => {}),
  }
}

export const SERVICE_BASE = 'http://ingest.test'
