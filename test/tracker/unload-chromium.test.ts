import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage } from './helpers/chromium'

/**
 * Leaving a page in headless Chromium, with t.js as built: Chromium fires pagehide, then
 * visibilitychange (hidden), then unload. What the page records in each of those listeners reaches
 * the service: no timer runs on a page that is gone, so it must go at once.
 */

const PAGE = `<!doctype html>
<html><head><title>Leaving</title></head>
<body>
  <a id="away" href="/away">away</a>
  <script src="/t.js"></script>
  <script>
    const tracker = ServiceTracker.init('sl_dev_leaving', { ingestionUrl: location.origin, enableAutomaticTracking: false })
    addEventListener('pagehide', () => tracker.customEvent('pagehide'))
    document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && tracker.customEvent('hidden'))
    addEventListener('unload', () => tracker.customEvent('unload'))
  </script>
</body></html>`

/** A page whose own pagehide listener, added before the tracker's, stops the tracker. */
const STOPPING_PAGE = `<!doctype html>
<html><head><title>Stopping</title></head>
<body>
  <a id="away" href="/away">away</a>
  <script>addEventListener('pagehide', () => tracker.stop())</script>
  <script src="/t.js"></script>
  <script>
    var tracker = ServiceTracker.init('sl_dev_stopping', { ingestionUrl: location.origin, enableAutomaticTracking: false })
    tracker.start()
  </script>
</body></html>`

const chromium = chromiumSite((_, url) => htmlPage(url.pathname === '/away' ? '<p>away</p>' : url.pathname === '/stopping' ? STOPPING_PAGE : PAGE))

/** The names of every custom event the site received. */
const received = (): string[] =>
  chromium.sends.filter(({ path }) => path === '/customEvent/batch').flatMap(({ body }) => body.events.map((event: { eventName: string }) => event.eventName))

describe('leaving a page, in headless Chromium', () => {
  test("what the page records in its pagehide, visibilitychange and unload listeners arrives, each once", async () => {
    const { browser, site } = chromium
    const { page } = browser
    await page.goto(site.url + '/')
    await page.click('#away')
    await page.waitForURL('**/away')
    for (let i = 0; i < 80 && received().length < 3; i++) await Bun.sleep(25)
    await Bun.sleep(200)
    expect(received().sort()).toEqual(['hidden', 'pagehide', 'unload'])
  }, 30_000)

  test("a page that stops the tracker in its own pagehide listener, run before the tracker's: what was queued and the session-end are sent, as leaving would", async () => {
    const { browser, site } = chromium
    const { page } = browser
    chromium.sends.length = 0
    await page.goto(site.url + '/stopping')
    for (let i = 0; i < 80 && !chromium.sends.some(({ path }) => path === '/heartbeat'); i++) await Bun.sleep(25)
    await page.evaluate(() => (window as any).tracker.customEvent('last'))
    await page.click('#away')
    await page.waitForURL('**/away')
    for (let i = 0; i < 80 && !chromium.sends.some(({ path }) => path === '/session-end'); i++) await Bun.sleep(25)
    await Bun.sleep(200)
    expect(chromium.sends.filter(({ path }) => path === '/session-end')).toHaveLength(1)
    expect(received()).toContain('last')
  }, 30_000)
})
