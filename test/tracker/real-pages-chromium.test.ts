import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openBrowser, type TestBrowser } from '../e2e/browser'
import { builtTracker } from './helpers/build'
import { eventually, startE2eCore, type E2eCore } from './helpers/e2e'

/**
 * The pages operators really have, in headless Chromium, with t.js as built, served first-party: the
 * site passes the tracker's requests on to a real core (a relay at its root would). What old libraries,
 * framework wrappers, disabled storage, a strict CSP and a missing beacon do to the page must not stop
 * the tracker's sends (each must be stored, no request refused) nor throw into the page or change
 * what the page itself does.
 */

let e2e: E2eCore
let site: ReturnType<typeof Bun.serve>
let browser: TestBrowser
/** Every status core answered the tracker with (passed on by the site). */
const answered: { path: string; status: number; body: string }[] = []
/** What the page threw, and its console errors and CSP violations. */
const thrown: string[] = []

/** The page's own scripts, each a file (the strict CSP allows no inline script): before t.js and after start(). */
const BEFORE: Record<string, string> = {
  // Prototype.js 1.6 style: arrays serialize themselves, to a JSON string; a date library's own dates.
  prototype: `
    Array.prototype.toJSON = function () { return '[' + Array.prototype.map.call(this, function (item) { return String(item) }).join(',') + ']' }
    Date.prototype.toJSON = function () { return 'date:' + this.getTime() }`,
  // A wrapper installed before the tracker, refusing some URLs synchronously.
  'wrapped-before': `
    const pageFetch = window.fetch
    window.fetch = function (input, init) {
      if (String(input instanceof Request ? input.url : input).includes('/refused')) throw new TypeError('refused by the page')
      return pageFetch.apply(this, arguments)
    }`,
  'quota-refused': `
    const setItem = Storage.prototype.setItem
    Storage.prototype.setItem = function () {
      if (this === localStorage) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
      return setItem.apply(this, arguments)
    }`,
  'no-beacon': `Navigator.prototype.sendBeacon = undefined`,
  'beacon-false': `Navigator.prototype.sendBeacon = function () { return false }`,
}

const AFTER: Record<string, string> = {
  // Zone.js / Sentry style: fetch and XMLHttpRequest wrapped after the tracker started.
  'wrapped-after': `
    const trackedFetch = window.fetch
    window.fetch = function (input, init) {
      if (String(input instanceof Request ? input.url : input).includes('/refused')) throw new TypeError('refused by the page')
      return trackedFetch.apply(this, arguments).then(function (response) { window.zoned = (window.zoned || 0) + 1; return response })
    }
    const open = XMLHttpRequest.prototype.open
    XMLHttpRequest.prototype.open = function () { this.zoned = true; return open.apply(this, arguments) }
    const send = XMLHttpRequest.prototype.send
    XMLHttpRequest.prototype.send = function () { return send.apply(this, arguments) }`,
  // A router that replaced pushState after the tracker wrapped it, calling the browser's own.
  router: `
    const nativePush = History.prototype.pushState
    history.pushState = function (state, title, url) { window.routed = (window.routed || 0) + 1; return nativePush.call(history, state, title, url) }`,
}

const page = (name: string) => `<!doctype html>
<html><head><title>${name}</title></head>
<body>
  <p id="text">${'words to record '.repeat(100)}</p>
  <script src="/before.js?case=${name}"></script>
  <script src="/t.js"></script>
  <script src="/start.js"></script>
  <script src="/after.js?case=${name}"></script>
</body></html>`

const START = `window.tracker = ServiceTracker.init('KEY', { ingestionUrl: location.origin }); window.tracker.start()`
const STRICT_CSP = "default-src 'self'; script-src 'self'; connect-src 'self'"
const js = (text: string) => new Response(text, { headers: { 'content-type': 'text/javascript' } })

beforeAll(async () => {
  e2e = await startE2eCore()
  const dir = await builtTracker()
  site = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname.startsWith('/api/ingestion/') || url.pathname.startsWith('/health/')) {
        const headers = new Headers()
        for (const name of ['authorization', 'content-type', 'content-encoding']) if (request.headers.has(name)) headers.set(name, request.headers.get(name)!)
        const response = await fetch(e2e.base + url.pathname + url.search, { method: request.method, headers, body: request.method === 'GET' ? undefined : await request.arrayBuffer() })
        const body = await response.text()
        if (url.pathname.startsWith('/api/')) answered.push({ path: url.pathname, status: response.status, body })
        return new Response(body, { status: response.status, headers: { 'content-type': response.headers.get('content-type') ?? 'text/plain' } })
      }
      const name = url.searchParams.get('case') ?? ''
      if (url.pathname === '/') return new Response(page(name), { headers: { 'content-type': 'text/html', ...(name === 'csp' ? { 'content-security-policy': STRICT_CSP } : {}) } })
      if (url.pathname === '/before.js') return js(BEFORE[name] ?? '')
      if (url.pathname === '/after.js') return js(AFTER[name] ?? '')
      if (url.pathname === '/start.js') return js(START.replace('KEY', e2e.core.key))
      if (url.pathname === '/t.js') return new Response(Bun.file(join(dir, 't.js')), { headers: { 'content-type': 'text/javascript' } })
      return new Response('not found', { status: 404 })
    },
  })
  browser = await openBrowser()
  watch(browser)
}, 60_000)

afterAll(async () => {
  await browser?.close()
  site?.stop(true)
  await e2e?.close()
})

beforeEach(() => {
  answered.length = 0
  thrown.length = 0
})

function watch({ page }: TestBrowser) {
  page.on('pageerror', (error) => thrown.push(String(error)))
  page.on('console', (message) => message.type() === 'error' && !/Failed to load resource/.test(message.text()) && thrown.push(message.text()))
}

const siteUrl = () => `http://127.0.0.1:${site.port}`
const refused = () => answered.filter((answer) => answer.status >= 400)

/** Opens the case's page and waits for the tracker's session. */
async function open(name: string, tab = browser) {
  await tab.page.goto(`${siteUrl()}/?case=${name}`)
  await tab.page.waitForFunction(() => (window as any).tracker?.getSessionId())
  return tab.page.evaluate(() => (window as any).tracker.getSessionId() as string)
}

/** What the page does in every case: an event with a list in it, an identify, an error, failed requests, a change to replay. */
async function actOnPage(tag: string, tab = browser) {
  return tab.page.evaluate(async (tag) => {
    const tracker = (window as any).tracker
    tracker.customEvent('checkout ' + tag, { items: ['a', 'b'], at: { n: 1 } })
    await tracker.identifyUser({ userProperties: { email: tag + '@example.com', roles: ['admin', 'dev'] } })
    tracker.captureError(new Error('a handled error ' + tag))
    await fetch('/missing-text-' + tag).catch(() => {})
    const more = document.createElement('div')
    more.textContent = 'more text '.repeat(300)
    document.body.append(more)
    return { array: JSON.stringify([1, 2]), date: JSON.stringify(new Date(5)) }
  }, tag)
}

/** What actOnPage produced is stored for the session, the list as a list. */
async function expectStored(sessionId: string, tag: string, networkUrls: string[] = []) {
  await eventually(async () => {
    const events = await e2e.rows<{ properties: any }>(sql`select properties from events where session_id = ${sessionId} and event_name = ${'checkout ' + tag}`)
    expect(events).toHaveLength(1)
    expect(events[0].properties).toMatchObject({ items: ['a', 'b'], at: { n: 1 } })
    const users = await e2e.rows<{ attributes: any }>(sql`select attributes from end_users where attributes->>'email' = ${tag + '@example.com'}`)
    expect(users.at(-1)?.attributes.roles).toEqual(['admin', 'dev'])
    expect(await e2e.rows(sql`select message from error_events where session_id = ${sessionId} and message = ${'a handled error ' + tag}`)).toHaveLength(1)
    const urls = (await e2e.rows<{ url: string }>(sql`select url from network_errors where session_id = ${sessionId} and url like ${'%-' + tag}`)).map((row) => new URL(row.url).pathname)
    expect(urls.sort()).toEqual(['/missing-text', ...networkUrls].map((url) => url + '-' + tag).sort())
    const replay = await e2e.replay(sessionId)
    expect(replay.some((event) => event.type === 2)).toBe(true)
    expect(replay.some((event) => event.type === 3)).toBe(true)
  }, 20_000)
  expect(refused()).toEqual([])
}

describe('the tracker on real-world pages, in headless Chromium', () => {
  test('a plain page: everything is stored (the baseline of the cases below)', async () => {
    const sessionId = await open('plain')
    await actOnPage('plain')
    await expectStored(sessionId, 'plain')
    expect(thrown).toEqual([])
  }, 60_000)

  test("a page whose arrays and dates serialize themselves (Prototype.js's toJSON): sends are stored as they were, the page's JSON unchanged", async () => {
    const sessionId = await open('prototype')
    const pages = await actOnPage('prototype')
    // The page's own serialization is still its own.
    expect(pages).toEqual({ array: '"[1,2]"', date: '"date:5"' })
    await expectStored(sessionId, 'prototype')
    expect(thrown).toEqual([])
  }, 60_000)

  test("the same page offline: what was kept in localStorage is sent as it was once back online", async () => {
    const sessionId = await open('prototype')
    await browser.context.setOffline(true)
    await browser.page.evaluate(() => (window as any).tracker.customEvent('kept offline', { items: ['a', 'b'] }))
    await Bun.sleep(1500)
    expect(await browser.page.evaluate(() => Object.keys(localStorage).filter((key) => key.startsWith('sl_outbox:')).length)).toBeGreaterThan(0)
    await browser.context.setOffline(false)
    await browser.page.evaluate(() => dispatchEvent(new Event('online')))
    await eventually(async () => {
      const events = await e2e.rows<{ properties: any }>(sql`select properties from events where session_id = ${sessionId} and event_name = 'kept offline'`)
      expect(events.map((event) => event.properties)).toEqual([{ items: ['a', 'b'] }])
    }, 20_000)
    expect(refused()).toEqual([])
    expect(thrown).toEqual([])
  }, 60_000)

  test('fetch and XMLHttpRequest wrapped after start (Zone.js style): the page\'s requests of every form are reported, its wrapper still runs, the tracker\'s sends go', async () => {
    const sessionId = await open('wrapped-after')
    await actOnPage('after')
    const outcome = await browser.page.evaluate(async () => {
      await fetch(new Request('/missing-request-after')).catch(() => {})
      await fetch(new URL('/missing-url-after', location.href)).catch(() => {})
      await fetch('missing-relative-after').catch(() => {})
      await new Promise((done) => {
        const xhr = new XMLHttpRequest()
        xhr.open('GET', '/missing-xhr-after')
        xhr.onloadend = done
        xhr.send()
      })
      let refusedError = ''
      try {
        await fetch('/refused')
      } catch (error) {
        refusedError = String(error)
      }
      return { refusedError, zoned: (window as any).zoned }
    })
    expect(outcome).toEqual({ refusedError: 'TypeError: refused by the page', zoned: 4 })
    await expectStored(sessionId, 'after', ['/missing-request', '/missing-url', '/missing-relative', '/missing-xhr'])
    expect(thrown).toEqual([])
  }, 60_000)

  test('fetch wrapped before the tracker, throwing for some URLs: the throw reaches the page as it is, everything else is reported and sent', async () => {
    const sessionId = await open('wrapped-before')
    await actOnPage('before')
    const refusedError = await browser.page.evaluate(() => {
      try {
        fetch('/refused')
        return 'not thrown'
      } catch (error) {
        return String(error)
      }
    })
    expect(refusedError).toBe('TypeError: refused by the page')
    await expectStored(sessionId, 'before')
    expect(thrown).toEqual([])
  }, 60_000)

  test('localStorage refusing every write (QuotaExceededError): the tracker goes on in memory and everything is stored', async () => {
    const sessionId = await open('quota-refused')
    await actOnPage('quota')
    await expectStored(sessionId, 'quota')
    expect(thrown).toEqual([])
  }, 60_000)

  test('localStorage full while offline: what is kept in memory goes when back online', async () => {
    const sessionId = await open('plain')
    // Another script of the page filled the origin's quota.
    const filled = await browser.page.evaluate(() => {
      const chunk = 'x'.repeat(512 * 1024)
      let i = 0
      try {
        for (; i < 40; i++) localStorage.setItem('filler:' + i, chunk)
      } catch {}
      return i
    })
    expect(filled).toBeLessThan(40)
    await browser.context.setOffline(true)
    await actOnPage('offline')
    await Bun.sleep(1500)
    await browser.context.setOffline(false)
    await browser.page.evaluate(() => dispatchEvent(new Event('online')))
    try {
      await expectStored(sessionId, 'offline')
      expect(thrown).toEqual([])
    } finally {
      await browser.page.evaluate(() => localStorage.clear())
    }
  }, 60_000)

  test('storage blocked altogether (cookies blocked: localStorage and sessionStorage throw on access): everything is stored', async () => {
    const blocked = await openBrowser({ blockCookies: true })
    watch(blocked)
    try {
      const sessionId = await open('plain', blocked)
      await actOnPage('blocked', blocked)
      await expectStored(sessionId, 'blocked')
      expect(thrown).toEqual([])
    } finally {
      await blocked.close()
    }
  }, 60_000)

  test("a strict CSP (script-src 'self', connect-src 'self', no blob: or worker): no violation, everything is stored, the replay gzipped", async () => {
    const violations: string[] = []
    await browser.page.exposeFunction('reportViolation', (text: string) => violations.push(text))
    await browser.page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => (window as any).reportViolation(`${e.violatedDirective} ${e.blockedURI}`)))
    const sessionId = await open('csp')
    await actOnPage('csp')
    await expectStored(sessionId, 'csp')
    expect(violations).toEqual([])
    expect(thrown).toEqual([])
    const handed = await browser.handed(siteUrl())
    expect(handed.some((request) => request.url.includes('/events?compression=gzip'))).toBe(true)
  }, 60_000)

  test('pushState replaced by a router after start, calling the browser\'s own: every route change is a page view, the router\'s code still runs', async () => {
    const sessionId = await open('router')
    const routed = await browser.page.evaluate(() => {
      history.pushState({}, '', '/products')
      history.pushState({}, '', '/products/1')
      return (window as any).routed
    })
    expect(routed).toBe(2)
    await eventually(async () => {
      const urls = (await e2e.rows<{ path: string }>(sql`select properties->>'path' as path from events where session_id = ${sessionId} and event_name = '$pageview'`)).map((row) => row.path)
      expect(urls).toEqual(expect.arrayContaining(['/', '/products', '/products/1']))
    }, 20_000)
    expect(refused()).toEqual([])
    expect(thrown).toEqual([])
  }, 60_000)

  for (const name of ['no-beacon', 'beacon-false']) {
    test(`sendBeacon ${name === 'no-beacon' ? 'undefined' : 'returning false'}: what the page records as it is left arrives`, async () => {
      const sessionId = await open(name)
      await browser.page.evaluate((name) => (window as any).tracker.customEvent('leaving ' + name), name)
      await browser.page.goto('about:blank')
      // A beacon refused is kept, and sent from the next page load.
      if (name === 'beacon-false') await open('plain')
      await eventually(async () => {
        expect(await e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = ${'leaving ' + name}`)).toHaveLength(1)
      }, 20_000)
      expect(refused()).toEqual([])
      expect(thrown).toEqual([])
    }, 60_000)
  }
})
