import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { serveRelay } from '@sightline/relay/adapters/bun'
import { EVENT_FLUSH_MS, REPLAY_FLUSH_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { uploadSourcemaps } from '../../../tracker/bin/upload'
import { builtTracker } from '../helpers/build'
import { settle } from '../helpers/clock'
import { openPage } from '../helpers/dom'
import { blockAuthorizedFetch, eventually, openBrowser, startE2eCore, type Browser, type E2eCore } from '../helpers/e2e'

/**
 * Through the relay: the site serves the relay under /_sl (the tracker's script included), the
 * page sends to its own origin, the relay forwards to a real core.
 */

let e2e: E2eCore
let relay: ReturnType<typeof serveRelay>
let site: string
beforeAll(async () => {
  e2e = await startE2eCore()
  const dist = await builtTracker()
  relay = serveRelay({ upstream: e2e.base, prefix: '/_sl', script: { path: join(dist, 't.js') }, port: 0, hostname: '127.0.0.1' })
  site = `http://127.0.0.1:${relay.port}`
}, 60_000)
afterAll(async () => {
  relay.stop(true)
  await e2e.close()
})

const browsers: Browser[] = []
afterEach(async () => {
  for (const browser of browsers.splice(0)) await browser.close()
})

describe('through the relay', () => {
  test('the script tag from <prefix>/t.js, nothing but the key: it finds the relay, starts, and everything lands', async () => {
    const page = openPage(`${site}/shop/item`, '<!doctype html><html><head><title>Item</title></head><body><h1>Socks</h1><p>SECRET-ADDRESS</p></body></html>', { scripts: true })
    try {
      const script = page.win.document.createElement('script')
      script.async = true
      script.src = '/_sl/t.js'
      script.dataset.apiKey = e2e.core.key
      const loaded = new Promise((resolve) => script.addEventListener('load', resolve))
      page.win.document.head.appendChild(script)
      await loaded
      const tracker = (page.win as any).ServiceTracker.init(e2e.core.key)
      expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: `${site}/_sl`, source: 'script' })
      const sessionId = tracker.getSessionId()
      tracker.customEvent('added to cart', { sku: 'socks' })
      await eventually(async () => {
        expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).map((e) => e.event_name)).toEqual(['$pageview', 'added to cart'])
        expect(await e2e.rows(sql`select 1 from presence where session_id = ${sessionId}`)).toHaveLength(1)
      })
      // Leaving: the replay so far goes by beacon through the relay, then the goodbye.
      page.win.dispatchEvent(new page.win.Event('pagehide'))
      await eventually(async () => {
        const replay = await e2e.replay(sessionId)
        expect(replay.map((e) => e.type)).toContain(2)
        expect(JSON.stringify(replay)).not.toContain('SECRET')
        expect(await e2e.rows(sql`select 1 from presence where session_id = ${sessionId}`)).toEqual([])
      })
      tracker.stop()
    } finally {
      await settle()
      await page.close()
    }
  })

  test('every path of the tracker, first-party, with gzipped bodies', async () => {
    const b = openBrowser(e2e.core.key, { release: 'shop@3' }, { url: `${site}/shop`, scriptUrl: `${site}/_sl/t.js`, compression: true, html: `<body><button id="b">Buy</button><p>${'filler text '.repeat(500)}</p></body>` })
    browsers.push(b)
    const { tracker, win, clock } = b
    win.console.warn = () => {}
    tracker.start()
    await settle()
    const { sessionId, endUserId } = tracker.getUserInfo()
    expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: `${site}/_sl`, source: 'script' })
    tracker.customEvent('checkout')
    await tracker.identifyUser({ userProperties: { email: 'grace@example.com' } })
    tracker.groupIdentify('team', 'navy')
    tracker.captureError(new Error('relayed error'))
    win.console.warn('relayed warning')
    await win.fetch(`${site}/shop/api/missing`).catch(() => {})
    win.document.getElementById('b')!.dispatchEvent(new win.MouseEvent('click', { bubbles: true }))
    await clock.advance(REPLAY_FLUSH_MS)
    await clock.advance(TELEMETRY_FLUSH_MS)
    await eventually(async () => {
      expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).map((e) => e.event_name)).toEqual([
        '$click',
        '$pageview',
        'checkout',
      ])
      expect(await e2e.rows(sql`select attributes from end_users where end_user_id = ${endUserId}`)).toEqual([{ attributes: { email: 'grace@example.com' } }])
      expect(await e2e.rows(sql`select group_key from group_members where end_user_id = ${endUserId}`)).toEqual([{ group_key: 'navy' }])
      expect(await e2e.rows(sql`select message, release from error_events where session_id = ${sessionId}`)).toEqual([{ message: 'relayed error', release: 'shop@3' }])
      expect(await e2e.rows(sql`select message from logs where session_id = ${sessionId}`)).toContainEqual({ message: 'relayed warning' })
      expect(await e2e.rows(sql`select status, error_type from network_errors where session_id = ${sessionId}`)).toEqual([{ status: 404, error_type: 'http' }])
      expect(await e2e.rows(sql`select name from spans where session_id = ${sessionId}`)).toEqual([{ name: 'GET /shop/api/missing' }])
      expect((await e2e.replay(sessionId)).map((e) => e.type)).toContain(2)
    })
    // The replay chunk was over 1 KB: it went gzipped, and the relay passed it through untouched.
    const [chunk] = await e2e.rows<{ raw_bytes: number }>(sql`select raw_bytes from replay_chunks where session_id = ${sessionId}`)
    expect(chunk.raw_bytes).toBeGreaterThan(1024)
  })

  test('sticky-beacon through the relay: blocked fetch, beacons (a gzipped one with ?compression=gzip) land', async () => {
    const b = openBrowser(e2e.core.key, { enableAutomaticTracking: false }, { url: `${site}/shop`, scriptUrl: `${site}/_sl/t.js`, compression: true, fetch: blockAuthorizedFetch, html: `<p>${'long text '.repeat(400)}</p>` })
    browsers.push(b)
    b.tracker.start()
    await settle()
    const sessionId = b.tracker.getSessionId()
    b.tracker.customEvent('blocked but delivered')
    await b.clock.advance(EVENT_FLUSH_MS)
    await b.clock.advance(REPLAY_FLUSH_MS)
    // Fetch is taken for blocked at its third failure in a row, each found out over the network (real
    // time), and the retries run on the page's clock: it goes on, however long the network takes.
    await eventually(async () => {
      await b.clock.advance(1000)
      expect(await e2e.rows(sql`select event_name from events where session_id = ${sessionId}`)).toEqual([{ event_name: 'blocked but delivered' }])
      expect((await e2e.replay(sessionId)).map((e) => e.type)).toContain(2)
    })
    // Blocked fetches never reach the page's fetch: every send that did went by beacon, the replay chunk gzipped.
    const posts = b.requests.filter((r) => r.method === 'POST' && !r.url.includes('/heartbeat'))
    expect(posts.map((r) => r.via)).toEqual(posts.map(() => 'beacon'))
    expect(posts.some((r) => r.url.endsWith('/_sl/api/ingestion/events?compression=gzip'))).toBe(true)
    expect(posts.some((r) => r.url.endsWith('/_sl/api/ingestion/customEvent/batch'))).toBe(true)
  })

  test('upload-sourcemaps through the relay stores the maps for the release', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'maps-'))
    try {
      await writeFile(join(dir, 'app.js.map'), JSON.stringify({ version: 3, file: 'app.js', sources: ['src/app.ts'], sourcesContent: ['export {}'], names: [], mappings: 'AAAA' }))
      let out = ''
      const code = await uploadSourcemaps(['--release', 'shop@3', '--api-key', e2e.core.key, '--url', `${site}/_sl`, dir], {
        fetch: (input, init) => fetch(input, init),
        out: { write: (text: string) => (out += text) },
        err: { write: (text: string) => (out += text) },
        env: {},
        sleep: async () => {},
      })
      expect(out).toContain('uploaded 1 source map for release shop@3')
      expect(code).toBe(0)
      expect(await e2e.rows(sql`select release, name from sourcemaps where release = 'shop@3'`)).toEqual([{ release: 'shop@3', name: 'app.js.map' }])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
