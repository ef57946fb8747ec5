import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createProject } from '@sightline/core/projects/service'
import { memoryLogger } from '../helpers/core'
import { openBrowser, type TestBrowser } from '../e2e/browser'
import { coreRequests } from '../e2e/delivery'
import { builtTracker } from './helpers/build'
import { eventually, startE2eCore, type E2eCore } from './helpers/e2e'

/**
 * The tracker sending straight to core on another origin, no relay: the page on
 * http://127.0.0.1:A, core on http://localhost:B. Every kind of send must get through the browser's
 * CORS checks (preflight for the key header, simple requests for beacons and the heartbeat), and
 * core's errors must be readable by the page, not an opaque network failure.
 */

const coreLog = memoryLogger('info')
let e2e: E2eCore
/** Core as the page sees it: another origin (localhost, not 127.0.0.1). */
let core: string
/** A core whose write queue takes nothing: every write is 503 `overloaded`. */
let full: E2eCore
let site: ReturnType<typeof Bun.serve>
let browser: TestBrowser
const failed: string[] = []
const consoled: string[] = []

const page = (key: string, ingestionUrl: string) => `<!doctype html>
<html><head><title>Cross-origin</title></head>
<body>
  <p id="text">${'words to record '.repeat(200)}</p>
  <script>if (location.search.includes('nobeacon')) Navigator.prototype.sendBeacon = undefined</script>
  <script src="/t.js"></script>
  <script>
    window.tracker = ServiceTracker.init(${JSON.stringify(key)}, { ingestionUrl: ${JSON.stringify(ingestionUrl)} })
    window.tracker.start()
  </script>
</body></html>`

beforeAll(async () => {
  e2e = await startE2eCore({ log: coreLog.log })
  core = e2e.base.replace('127.0.0.1', 'localhost')
  full = await startE2eCore({ writer: { maxQueuedRows: 0 } })
  const dir = await builtTracker()
  site = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname === '/') return new Response(page(url.searchParams.get('key') ?? e2e.core.key, url.searchParams.get('core') ?? core), { headers: { 'content-type': 'text/html' } })
      if (url.pathname === '/missing') return new Response('gone', { status: 404 })
      const file = Bun.file(join(dir, url.pathname))
      if (url.pathname.endsWith('.js') && (await file.exists())) return new Response(file, { headers: { 'content-type': 'text/javascript' } })
      return new Response('not found', { status: 404 })
    },
  })
  browser = await openBrowser()
  browser.page.on('requestfailed', (request) => failed.push(`${request.method()} ${request.url()} ${request.failure()?.errorText}`))
  browser.page.on('console', (message) => message.type() === 'error' && consoled.push(message.text()))
}, 60_000)

afterAll(async () => {
  await browser?.close()
  site?.stop(true)
  await full?.close()
  await e2e?.close()
})

beforeEach(() => {
  failed.length = 0
  consoled.length = 0
})

const siteUrl = () => `http://127.0.0.1:${site.port}`
const corsFailures = () => [...failed, ...consoled].filter((line) => /CORS|Access-Control|ERR_FAILED/.test(line))

describe('sending straight to core on another origin, in headless Chromium', () => {
  test('every kind of send arrives, with no CORS failure', async () => {
    const { page } = browser
    await page.goto(`${siteUrl()}/`)
    await page.waitForFunction(() => (window as any).tracker.getSessionId())
    const sessionId: string = await page.evaluate(async () => {
      const tracker = (window as any).tracker
      tracker.customEvent('single', { n: 1 })
      for (let i = 0; i < 5; i++) tracker.customEvent('batched', { i })
      await tracker.identifyUser({ userProperties: { email: 'cross@example.com', name: 'Cross Origin' } })
      tracker.groupIdentify('company', 'acme', { plan: 'pro' })
      console.warn('a console line')
      tracker.captureError(new Error('an error, cross-origin'))
      await fetch('/missing').catch(() => {})
      // Replay: a page change big enough to be gzipped.
      const more = document.createElement('div')
      more.textContent = 'x'.repeat(4000) + Math.random()
      document.body.append(more)
      return tracker.getSessionId()
    })
    const test = await page.evaluate(() => (window as any).tracker.testConnection())
    expect(test).toMatchObject({ ok: true, status: 200, blocked: false })

    await eventually(async () => {
      expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId}`)).map((row) => row.event_name).sort()).toEqual(
        expect.arrayContaining(['single', 'batched', 'batched', 'batched', 'batched', 'batched']),
      )
      expect(await e2e.rows(sql`select message from logs where session_id = ${sessionId} and message = 'a console line'`)).toHaveLength(1)
      expect(await e2e.rows(sql`select message from error_events where session_id = ${sessionId}`)).toEqual([{ message: 'an error, cross-origin' }])
      expect((await e2e.rows<{ url: string }>(sql`select url from network_errors where session_id = ${sessionId}`)).map((row) => row.url)).toEqual([expect.stringContaining('/missing')])
      expect(await e2e.rows(sql`select group_key from groups where group_key = 'acme'`)).toEqual([{ group_key: 'acme' }])
      expect(await e2e.rows(sql`select attributes->>'email' as email from end_users where attributes->>'email' = 'cross@example.com'`)).toHaveLength(1)
      const replay = await e2e.replay(sessionId)
      expect(replay.some((event) => event.type === 2)).toBe(true)
      // The page is recorded privacy-first: the text comes masked, but whole.
      expect(JSON.stringify(replay)).toContain('*'.repeat(4000))
      expect(await e2e.rows(sql`select 1 from presence where session_id = ${sessionId}`)).not.toHaveLength(0)
    }, 20_000)

    // Sent with the key header (not fallen back to beacons), the replay gzipped.
    expect(await page.evaluate(() => (window as any).tracker.getConnectionStatus())).toMatchObject({ transport: 'fetch', blocked: false, reachable: true })
    const handed = await browser.handed(siteUrl())
    expect(handed.some((request) => request.via === 'fetch' && request.url.includes('/events?compression=gzip'))).toBe(true)

    // Leaving: what is queued goes by beacon, with session-end.
    await page.evaluate(() => (window as any).tracker.customEvent('left'))
    await page.goto('about:blank')
    const left = (await browser.handed(siteUrl())).slice(handed.length).map((request) => `${request.via} ${new URL(request.url).pathname}`)
    expect(left).toEqual(expect.arrayContaining(['beacon /api/ingestion/customEvent/batch', 'beacon /api/ingestion/session-end']))
    await eventually(async () => {
      expect(await e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = 'left'`)).toHaveLength(1)
      expect((await e2e.rows<{ ended_at: unknown }>(sql`select ended_at from sessions where session_id = ${sessionId}`))[0].ended_at).not.toBeNull()
    })
    expect(corsFailures()).toEqual([])
    // The key header is preflighted, and the preflight answered 204.
    const requests = coreRequests(coreLog.lines)
    expect(requests.filter((r) => r.method === 'OPTIONS').map((r) => r.status)).not.toHaveLength(0)
    expect(requests.filter((r) => r.method === 'OPTIONS' && r.status !== 204)).toEqual([])
    expect(requests.filter((r) => r.status >= 400)).toEqual([])
  }, 60_000)

  test('offline, then online: what was kept is sent cross-origin', async () => {
    const { page, context } = browser
    await page.goto(`${siteUrl()}/`)
    await page.waitForFunction(() => (window as any).tracker.getSessionId())
    await context.setOffline(true)
    const sessionId: string = await page.evaluate(() => {
      const tracker = (window as any).tracker
      tracker.customEvent('while_offline')
      return tracker.getSessionId()
    })
    await Bun.sleep(1500)
    await context.setOffline(false)
    await eventually(async () => {
      expect(await e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = 'while_offline'`)).toHaveLength(1)
    }, 20_000)
  }, 60_000)

  test('without sendBeacon, the unload path (fetch with keepalive, key in the body) arrives', async () => {
    const { page } = browser
    await page.goto(`${siteUrl()}/?nobeacon`)
    await page.waitForFunction(() => (window as any).tracker.getSessionId())
    // What the page before this one sent as it was left is not this page's.
    const before = (await browser.handed(siteUrl())).length
    const sessionId: string = await page.evaluate(() => {
      const tracker = (window as any).tracker
      tracker.customEvent('left_by_keepalive')
      return tracker.getSessionId()
    })
    await page.goto('about:blank')
    await eventually(async () => {
      expect(await e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = 'left_by_keepalive'`)).toHaveLength(1)
      expect((await e2e.rows<{ ended_at: unknown }>(sql`select ended_at from sessions where session_id = ${sessionId}`))[0].ended_at).not.toBeNull()
    })
    const handed = (await browser.handed(siteUrl())).slice(before).map((request) => `${request.via} ${new URL(request.url).pathname}`)
    expect(handed).toContain('fetch /api/ingestion/session-end')
    expect(handed.filter((line) => line.startsWith('beacon'))).toEqual([])
    expect(corsFailures()).toEqual([])
  }, 60_000)

  test('the preflight for the key header, as Chromium asks it, is answered in full', async () => {
    const response = await fetch(`${core}/api/ingestion/customEvent/batch`, {
      method: 'OPTIONS',
      headers: { origin: siteUrl(), 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe(siteUrl())
    expect(response.headers.get('access-control-allow-methods')).toBe('POST, GET, OPTIONS')
    expect(response.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, Content-Encoding')
    expect(response.headers.get('access-control-max-age')).toBe('86400')
    expect(response.headers.get('vary')).toBe('Origin')
  })

  /** A fetch from the page as the tracker makes it (key header, JSON), its answer as the page reads it. */
  const fromPage = (base: string, key: string, body: string, path = '/api/ingestion/customEvent/batch') =>
    browser.page.evaluate(
      async ({ url, key, body }) => {
        try {
          const response = await fetch(url, { method: 'POST', headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' }, body })
          return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() }
        } catch (error) {
          return { status: 0, error: String(error) }
        }
      },
      { url: base + path, key, body },
    )

  test("core's errors are readable from the page: 401, 413, 429 (monthlyLimitReached), 503 (Retry-After)", async () => {
    await browser.page.goto(`${siteUrl()}/?key=none`)
    const events = (sessionId: string) => JSON.stringify({ sessionId, events: [{ eventName: 'e', timestamp: Date.now(), uuid: crypto.randomUUID() }] })

    expect(await fromPage(core, 'sl_dev_unknown', events('s-401'))).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } })
    expect(await fromPage(core, e2e.core.key, 'x'.repeat(1_100_000))).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } })

    const capped = await createProject(e2e.core.database.db.orm, { name: 'capped', monthlyLimit: 0 })
    expect(await fromPage(core, capped.keys.development, events('s-429'))).toMatchObject({ status: 429, body: { monthlyLimitReached: true } })

    const fullCore = full.base.replace('127.0.0.1', 'localhost')
    expect(await fromPage(fullCore, full.core.key, events('s-503'))).toMatchObject({ status: 503, retryAfter: '1', body: { error: { code: 'overloaded' } } })
    expect(corsFailures()).toEqual([])
  }, 60_000)
})
