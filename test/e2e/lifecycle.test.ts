import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { BrowserContext, Page } from 'playwright-core'
import { HEARTBEAT_MS, REPLAY_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser, type TestBrowser } from './browser'
import { decodeHanded } from './delivery'
import { trackerStarted } from './journey'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * The page lifecycle in headless Chromium, through the relay: a page left into the back/forward
 * cache (pagehide with persisted) and shown again (pageshow with persisted), as Chromium keeps pages
 * once Playwright lets it.
 */

const suite = e2eSuite()
const open = closedAfterEach()

/**
 * Before any page script: how many requests the tab had handed over when a page was shown again from
 * the cache, and when that was (the page's clock, the tracker's).
 */
const RESTORE_MARKER = `addEventListener('pageshow', (event) => {
  if (!event.persisted) return
  window.restoredAt = Number(sessionStorage.getItem('sightline-test:handed') || 0)
  window.restoredTime = Date.now()
})`

/**
 * What the page shown again handed over since, decoded. It is not hidden meanwhile, so it sends by
 * fetch; the page it was restored from may record its goodbye beacons in the tab's sessionStorage
 * after the mark (another renderer's writes), and those are left out.
 */
async function handedSinceRestore(browser: TestBrowser, origin: string) {
  const from = await browser.page.evaluate(() => (window as unknown as { restoredAt: number }).restoredAt)
  return (await browser.handed(origin))
    .slice(from)
    .filter((request) => request.via === 'fetch')
    .map((request) => decodeHanded(request))
}

/**
 * The custom events the page shown again produced, each once: a request under way when a page was
 * left is kept and sent again by the page that drains the tab's outbox next (the service stores each
 * uuid once), and may be among what was handed since.
 */
async function eventsSinceRestore(browser: TestBrowser, origin: string) {
  const restoredTime = await browser.page.evaluate(() => (window as unknown as { restoredTime: number }).restoredTime)
  const events = (await handedSinceRestore(browser, origin)).filter((r) => r.path === '/customEvent/batch').flatMap((r) => r.body.events as { eventName: string; uuid: string; timestamp: number }[])
  return [...new Map(events.filter((event) => event.timestamp >= restoredTime).map((event) => [event.uuid, event])).values()]
}

/**
 * Chromium's reasons, as DevTools gives them, for each back or forward navigation of the tab that
 * loaded its page afresh rather than restoring it from the cache (PageSupportNeeded: the page's doing).
 */
async function cacheMisses(context: BrowserContext, page: Page): Promise<string[]> {
  const misses: string[] = []
  const devtools = await context.newCDPSession(page)
  await devtools.send('Page.enable')
  devtools.on('Page.backForwardCacheNotUsed', (event) => misses.push(event.notRestoredExplanations.map((e) => `${e.reason} (${e.type})`).join(', ')))
  return misses
}

/**
 * Goes back or forward and waits until the page is shown: restored from the cache, or (what fails the
 * test at once, with Chromium's reasons, rather than at its timeout) loaded afresh.
 */
async function shownFromCache(page: Page, misses: string[], go: () => Promise<unknown>): Promise<void> {
  const before = misses.length
  await go()
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await Bun.sleep(25)) {
    expect(misses.slice(before)).toEqual([])
    const restored = await page.evaluate(() => (window as unknown as { restoredAt?: number }).restoredAt !== undefined).catch(() => false)
    if (restored) return
  }
  throw new Error(`${page.url()} was neither restored nor loaded afresh`)
}

const userInfo = (page: Page) => page.evaluate(() => window.shop.tracker().then((tracker) => tracker.getUserInfo()))

describe('the back/forward cache, in headless Chromium', () => {
  test('left, the window says goodbye; shown again, presence, tracking and recording resume once each, the replay with a full snapshot of the page shown again', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const browser = open(await openBrowser({ backForwardCache: true }))
    const { page, context } = browser
    await context.addInitScript({ content: RESTORE_MARKER })
    const misses = await cacheMisses(context, page)
    await page.clock.install()
    await page.goto(`${shop.url}/`)
    await trackerStarted(page)
    const home = await userInfo(page)

    // A full page load in the same tab: the home page goes to the cache; then back to it.
    await Promise.all([page.waitForURL('**/cart'), page.click('nav >> text=Cart')])
    await trackerStarted(page)
    await shownFromCache(page, misses, () => page.goBack({ waitUntil: 'commit' }))
    expect(await userInfo(page)).toMatchObject({ sessionId: home.sessionId, windowId: home.windowId })

    await page.click('nav >> text=Wool socks')
    await page.click('#add')
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await page.clock.fastForward(HEARTBEAT_MS)
    await eventually(async () => expect((await handedSinceRestore(browser, shop.url)).map((r) => r.path)).toContain('/events'))
    const since = await handedSinceRestore(browser, shop.url)
    // Presence at once, and every 30 s from then: one timer.
    expect(since.filter((r) => r.path === '/heartbeat')).toHaveLength(2)
    // One listener: the click is reported once.
    const events = (await eventsSinceRestore(browser, shop.url)).map((event) => event.eventName)
    expect(events.sort()).toEqual(['$click', '$click', '$navigation', '$pageview', 'add_to_cart'])
    // The tab showed the cart meanwhile: the replay of this window goes on from a full snapshot of the page shown again.
    const chunks = since.filter((r) => r.path === '/events')
    expect(chunks.every((r) => r.body.sessionId === home.sessionId && r.body.windowId === home.windowId)).toBe(true)
    const types = chunks.flatMap((r) => r.body.events.map((e: { type: number }) => e.type))
    expect(types.slice(0, 2)).toEqual([4, 2])

    // The goodbyes: the home page and the cart, each as it was left.
    await page.goto('about:blank')
    const goodbyes = (await browser.handed(shop.url)).map((request) => ({ via: request.via, path: decodeHanded(request).path })).filter((r) => r.path === '/session-end')
    expect(goodbyes).toEqual([
      { via: 'beacon', path: '/session-end' },
      { via: 'beacon', path: '/session-end' },
      { via: 'beacon', path: '/session-end' },
    ])
    await eventually(async () => {
      const stored = await suite.e2e.rows<{ has_full_snapshot: boolean; seq: number }>(sql`select seq, has_full_snapshot from replay_chunks where session_id = ${home.sessionId} and window_id = ${home.windowId} order by seq`)
      expect(stored.map((c) => c.seq)).toEqual(stored.map((_, i) => i))
    })
  })

  test('on a slow network too: a page hidden while its tracker sends what was kept lets the next page of the site have the outbox, and stays in the cache', async () => {
    // Every request to the service takes 1.5 s: the pages are left and shown again while sends are under way.
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' }, latencyMs: 1500 }))
    const browser = open(await openBrowser({ backForwardCache: true }))
    const { page, context } = browser
    await context.addInitScript({ content: RESTORE_MARKER })
    const misses = await cacheMisses(context, page)
    await page.goto(`${shop.url}/`)
    await trackerStarted(page)

    // Left at once: what the home page had under way is kept, and the cart sends it, holding the outbox 1.5 s a request.
    await Promise.all([page.waitForURL('**/cart'), page.click('nav >> text=Cart')])
    await trackerStarted(page)
    const kept = () => page.evaluate(() => Object.keys(localStorage).filter((key) => key.startsWith('sl_outbox:') && key.includes('/')).length)
    expect(await kept()).toBeGreaterThan(0)
    // Back to the home page while the cart sends, then forward to the cart while the home page may: each is restored.
    await shownFromCache(page, misses, () => page.goBack({ waitUntil: 'commit' }))
    await shownFromCache(page, misses, () => page.goForward({ waitUntil: 'commit' }))
    expect(new URL(page.url()).pathname).toBe('/cart')
    // And what was kept is sent all the same: a page shown again drains once its heartbeat is answered.
    await eventually(async () => expect(await kept()).toBe(0), 20_000)
  })
})
