import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { ServiceTracker } from '@sightline/tracker'
import { randomHex } from '@sightline/tracker/ids'
import { BEACON_MAX_BYTES, BLOCKED_AFTER_FAILURES } from '@sightline/tracker/transport'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { e2eSuite } from './suite'

/**
 * Sticky mode in a real browser. A proxy in front of core refuses every CORS preflight, as some do:
 * the tracker's fetch with the key in its Authorization header fails while the service answers.
 * The tracker then sends by beacon (the key in the body: a text/plain string, or gzipped bytes with
 * gzip said in the query), which Chromium sends with no preflight; what a beacon cannot carry, a
 * full snapshot far over its 64 KB, goes as a CORS-simple fetch, with no preflight either.
 */

const suite = e2eSuite()
const open = closedAfterEach()

interface ProxyHit {
  method: string
  path: string
  query: string
  authorized: boolean
  contentType: string | null
  /** A preflight's `Access-Control-Request-Headers`. */
  preflightFor: string | null
  /** `Sec-Fetch-Mode`: `no-cors` for a text/plain (or untyped) beacon, `cors` for fetch. */
  mode: string | null
  bytes: number
  status: number
}

/** Core on an origin of its own, behind a proxy that refuses preflights and passes everything else on. */
function preflightRefusingProxy(core: string) {
  const hits: ProxyHit[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      const headers = request.headers
      const hit: ProxyHit = {
        method: request.method,
        path: url.pathname,
        query: url.search,
        authorized: headers.has('authorization'),
        contentType: headers.get('content-type'),
        preflightFor: headers.get('access-control-request-headers'),
        mode: headers.get('sec-fetch-mode'),
        bytes: 0,
        status: 403,
      }
      hits.push(hit)
      if (request.method === 'OPTIONS') return new Response('no preflights here', { status: 403 })
      const body = request.method === 'POST' ? await request.arrayBuffer() : undefined
      hit.bytes = body?.byteLength ?? 0
      const forwarded = new Headers()
      for (const name of ['authorization', 'content-type']) if (headers.has(name)) forwarded.set(name, headers.get(name)!)
      const answer = await fetch(core + url.pathname + url.search, { method: request.method, headers: forwarded, body })
      hit.status = answer.status
      const cors = { 'access-control-allow-origin': headers.get('origin') ?? '*', vary: 'Origin' }
      return new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.headers.get('content-type') ?? 'text/plain', ...cors } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, hits, close: () => server.stop(true) }
}

/** A page with a long text (shown: visibility-first) and the tracker, sending to `ingestionUrl`. */
function longPage(script: string, key: string, ingestionUrl: string, text: string) {
  const html = `<!doctype html><html><head><title>Long read</title>
    <script async id="sightline" src="/t.js" data-key="${key}" data-ingestion-url="${ingestionUrl}"
      onload="ServiceTracker.init(this.dataset.key, { ingestionUrl: this.dataset.ingestionUrl, redactionStrategy: { mode: 'visibility-first' } }).start(); this.dataset.started = 'yes'"></script>
    </head><body><h1>Long read</h1><p id="long">${text}</p></body></html>`
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const { pathname } = new URL(request.url)
      if (pathname === '/t.js') return new Response(Bun.file(script), { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
      if (pathname === '/') return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
      return new Response('not found', { status: 404 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) }
}

type PageWithTracker = Window & { ServiceTracker: typeof ServiceTracker }

describe('sticky mode in headless Chromium', () => {
  test('preflights refused: the tracker sends by beacon, with no preflight, and a full snapshot of about 100 KB gzipped goes as a simple fetch and is stored', async () => {
    const proxy = open(preflightRefusingProxy(suite.e2e.base))
    // Text that hardly compresses: the full snapshot is about 100 KB gzipped.
    const text = randomHex(100_000)
    const site = open(longPage(suite.script, suite.e2e.core.key, proxy.url, text))
    const browser = open(await openBrowser())
    const { page } = browser
    await page.goto(`${site.url}/`)
    await page.waitForFunction(() => document.getElementById('sightline')?.dataset.started === 'yes')
    const note = 'a quiet paragraph '.repeat(200)
    const sessionId = await page.evaluate((note) => {
      const tracker = (window as unknown as PageWithTracker).ServiceTracker.init(document.getElementById('sightline')!.dataset.key!)
      tracker.customEvent('read_to_the_end')
      // Over 1 KB: its batch goes gzipped.
      tracker.customEvent('left_a_note', { note })
      return tracker.getSessionId()
    }, note)

    await eventually(async () => {
      const events = await suite.e2e.rows(sql`select event_name from events where session_id = ${sessionId} order by event_name`)
      expect(events).toEqual([{ event_name: '$pageview' }, { event_name: 'left_a_note' }, { event_name: 'read_to_the_end' }])
      const snapshots = (await suite.e2e.replay(sessionId)).filter((event) => event.type === 2)
      expect(snapshots).toHaveLength(1)
      expect(JSON.stringify(snapshots[0])).toContain(text)
    }, 20_000)
    const status = await page.evaluate(() => (window as unknown as PageWithTracker).ServiceTracker.init(document.getElementById('sightline')!.dataset.key!).getConnectionStatus())
    expect(status).toMatchObject({ blocked: true, transport: 'beacon', queued: 0 })

    // Every preflight was for the key header, and refused; every POST went without one and was stored.
    const preflights = proxy.hits.filter((hit) => hit.method === 'OPTIONS')
    expect(preflights.length).toBeGreaterThanOrEqual(BLOCKED_AFTER_FAILURES)
    expect(preflights.every((hit) => hit.preflightFor?.toLowerCase().includes('authorization'))).toBe(true)
    const posts = proxy.hits.filter((hit) => hit.method === 'POST')
    expect(posts.map((hit) => [hit.authorized, hit.status])).toEqual(posts.map(() => [false, 200]))
    // By beacon: the custom events, a text/plain string when small, gzipped bytes with no type when not.
    const beacons = posts.filter((hit) => hit.mode === 'no-cors')
    const batches = beacons.filter((hit) => hit.path === '/api/ingestion/customEvent/batch')
    expect(batches.length).toBeGreaterThan(0)
    expect(batches.every((hit) => (hit.query === '?compression=gzip' ? hit.contentType === null : hit.contentType === 'text/plain;charset=UTF-8'))).toBe(true)
    expect(batches.some((hit) => hit.query === '?compression=gzip')).toBe(true)
    expect(beacons.every((hit) => hit.bytes <= BEACON_MAX_BYTES)).toBe(true)
    // Fetched (CORS-simple): the heartbeat, whose answer is read, and the full snapshot a beacon
    // cannot carry, gzipped bytes with no Content-Type, the compression in the query.
    const fetched = posts.filter((hit) => hit.mode !== 'no-cors')
    expect(fetched.map((hit) => hit.mode)).toEqual(fetched.map(() => 'cors'))
    const snapshot = fetched.filter((hit) => hit.path !== '/api/ingestion/heartbeat')
    expect(snapshot.map((hit) => [hit.path, hit.query, hit.contentType, hit.bytes > 64 * 1024])).toEqual([['/api/ingestion/events', '?compression=gzip', null, true]])
    // What arrived in no-cors mode is what the page handed to sendBeacon.
    const handed = (await browser.handed(site.url)).filter((request) => request.via === 'beacon').map((request) => new URL(request.url))
    expect(handed.map((url) => url.pathname + url.search)).toEqual(beacons.map((hit) => hit.path + hit.query))
  })
})
