import { sql, type SQL } from 'drizzle-orm'
import { ServiceTracker, type FetchFunction, type TrackerOptions } from '@sightline/tracker'
import { decodeChunk } from '@sightline/core/ingest/replay/encode'
import { startCore, type TestCore } from '../../helpers/core'
import { fakeClock, settle, type FakeClock } from './clock'
import { openPage, type Page, type PageOptions } from './dom'

/**
 * End to end: the tracker in a happy-dom page, on happy-dom's own fetch and sendBeacon (real HTTP,
 * with the CORS preflights a browser makes), to a real core on a real socket and database.
 */
export interface Browser {
  page: Page
  win: Page['win']
  tracker: ServiceTracker
  clock: FakeClock
  /** Every request the tracker made through fetch or sendBeacon (happy-dom sends beacons with fetch). */
  requests: { url: string; method: string; via: 'fetch' | 'beacon' }[]
  close(): Promise<void>
}

export interface BrowserOptions {
  url?: string
  html?: string
  storage?: PageOptions
  offline?: boolean
  clock?: FakeClock
  scriptUrl?: string | null
  /** Wraps the page's fetch (a blocker, a lost response). */
  fetch?: (real: FetchFunction) => FetchFunction
  /** Give the page CompressionStream (happy-dom has none), so bodies go gzipped. */
  compression?: boolean
}

export function openBrowser(key: string, options: TrackerOptions, browser: BrowserOptions = {}): Browser {
  const page = openPage(browser.url ?? 'http://shop.test/', browser.html, browser.storage)
  const win = page.win
  if (browser.offline) Object.defineProperty(win.navigator, 'onLine', { value: false, configurable: true })
  if (browser.compression) (win as { CompressionStream?: unknown }).CompressionStream = CompressionStream
  const requests: Browser['requests'] = []
  const pageFetch = win.fetch.bind(win)
  const counted = (input: Parameters<FetchFunction>[0], init?: RequestInit, via: 'fetch' | 'beacon' = 'fetch') => {
    requests.push({ url: String(input instanceof Request ? input.url : input), method: init?.method ?? 'GET', via })
    return pageFetch(input, init)
  }
  win.fetch = counted as typeof win.fetch
  // happy-dom's sendBeacon is a fetch whose failure nobody handles (a page closed with one in flight
  // would be an unhandled rejection); a browser's just gives up. The same, handled:
  win.navigator.sendBeacon = (url: string | URL, data?: BodyInit | null) => {
    counted(url, { method: 'POST', body: data }, 'beacon').catch(() => {})
    return true
  }
  const fetch = browser.fetch ? browser.fetch(counted) : counted
  const clock = browser.clock ?? fakeClock(Date.now())
  const tracker = ServiceTracker.init(key, { logLevel: 'none', ...options }, { window: win, fetch, clock, scriptUrl: browser.scriptUrl ?? null })
  return {
    page,
    win,
    tracker,
    clock,
    requests,
    async close() {
      tracker.stop()
      await settle()
      await page.close()
    },
  }
}

/** A blocker, or a proxy that drops preflights: every fetch with an Authorization header fails. */
export const blockAuthorizedFetch =
  (real: FetchFunction): FetchFunction =>
  (input, init) =>
    new Headers(init?.headers).has('authorization') ? Promise.reject(new TypeError('Failed to fetch')) : real(input, init)

/** Polls until `check` passes (real requests take real time), or fails with its last error. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await Bun.sleep(25)
    }
  }
}

export interface E2eCore {
  core: TestCore
  base: string
  rows<T = Record<string, unknown>>(query: SQL): Promise<T[]>
  /** Every replay event stored for a session, decoded. */
  replay(sessionId: string): Promise<{ type: number; data: any }[]>
  close(): Promise<void>
}

export async function startE2eCore(options: Parameters<typeof startCore>[0] = {}): Promise<E2eCore> {
  const core = await startCore(options)
  const base = await core.listen()
  const rows = <T>(query: SQL) => core.database.db.rows<T>(query)
  return {
    core,
    base,
    rows,
    async replay(sessionId) {
      const chunks = await rows<{ data: Uint8Array }>(sql`select data from replay_chunks where session_id = ${sessionId} order by seq, first_timestamp`)
      return chunks.flatMap((chunk) => decodeChunk(chunk.data) as { type: number; data: any }[])
    },
    close: () => core.close(),
  }
}
