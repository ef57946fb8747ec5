import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { builtTracker } from './helpers/build'
import { chromiumSite, htmlPage } from './helpers/chromium'

/**
 * How sites load and set up t.js, as built, in headless Chromium: the snippet twice on a page (the
 * template and a tag manager), and in a srcdoc frame. Each page is served at its own path.
 */

const PAGES: Record<string, string> = {
  '/twice': `<script src="/t.js" data-api-key="sl_dev_twice"></script>
    <script async src="/t.js" data-api-key="sl_dev_twice"></script>`,
  // A frame of the page's own origin with no URL of its own (about:srcdoc): the relay renamed, said by the meta tag.
  '/srcdoc': `<iframe srcdoc='<meta name="sightline-ingestion-url" content="/metrics"><script src="/metrics/sl.js"></script>
    <script>try { ServiceTracker.init("sl_dev_srcdoc").customEvent("in a frame") } catch (error) { console.log("threw: " + error) }</script>'></iframe>`,
}

// t.js, as built, at a path of the page's own as well (a relay renamed): the site has built it before it serves.
const chromium = chromiumSite(async (_, url) =>
  url.pathname === '/metrics/sl.js'
    ? new Response(Bun.file(join(await builtTracker(), 't.js')), { headers: { 'content-type': 'text/javascript' } })
    : htmlPage(`<!doctype html><html><head></head><body><p>A page</p>${PAGES[url.pathname] ?? ''}</body></html>`),
)

describe('loading t.js, in headless Chromium', () => {
  test('included twice with the same key: one tracker, whose page view, recording and heartbeat go once', async () => {
    const { browser, site, sends } = chromium
    const { page } = browser
    sends.length = 0
    await page.goto(`${site.url}/twice`)
    await page.waitForFunction(() => document.querySelectorAll('script[src="/t.js"]').length === 2 && (window as any).ServiceTracker)
    const pageViews = () => sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events).filter((e: { eventName: string }) => e.eventName === '$pageview')
    for (let i = 0; i < 200 && (pageViews().length === 0 || !sends.some((s) => s.path === '/heartbeat')); i++) await Bun.sleep(25)
    await Bun.sleep(500)
    expect(pageViews()).toHaveLength(1)
    expect(sends.filter((s) => s.path === '/heartbeat')).toHaveLength(1)
    await page.goto('about:blank')
    await Bun.sleep(300)
    // The recording: one window, so one full snapshot.
    const snapshots = sends.filter((s) => s.path === '/events').flatMap((s) => s.body.events).filter((e: { type: number }) => e.type === 2)
    expect(snapshots).toHaveLength(1)
  }, 30_000)

  test("in a srcdoc frame, a relative meta tag resolves against the frame's base URL, as the browser's own URLs there do: sent, nothing thrown", async () => {
    const { browser, site, sends } = chromium
    const { page } = browser
    sends.length = 0
    const said: string[] = []
    const onConsole = (message: { text(): string }) => said.push(message.text())
    page.on('console', onConsole)
    await page.goto(`${site.url}/srcdoc`)
    for (let i = 0; i < 200 && !sends.some((s) => s.path === '/customEvent/batch'); i++) await Bun.sleep(25)
    page.off('console', onConsole)
    expect(said).toEqual([])
    expect(sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['in a frame'])
  }, 30_000)
})
