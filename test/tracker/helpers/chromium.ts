import { afterAll, beforeAll } from 'bun:test'
import { openBrowser, type TestBrowser } from '../../e2e/browser'
import { startTrackedSite, type SiteSend } from './site'

export type Tab = TestBrowser['page']

export interface ChromiumSite {
  site: Awaited<ReturnType<typeof startTrackedSite>>
  browser: TestBrowser
  /** Every send of the tracker, in order. A test empties it (`sends.length = 0`) before what it reads. */
  sends: SiteSend[]
}

/**
 * What a *-chromium test file sets up: a tracked site (see startTrackedSite; `serve` answers the page's
 * own requests) and a headless Chromium, opened before the file's tests and closed after them. `site`
 * and `browser` are there once the tests run.
 */
export function chromiumSite(serve: Parameters<typeof startTrackedSite>[0]): ChromiumSite {
  const opened = { sends: [] as SiteSend[] } as ChromiumSite
  beforeAll(async () => {
    opened.site = await startTrackedSite(serve, (send) => opened.sends.push(send))
    opened.browser = await openBrowser()
  }, 60_000)
  afterAll(async () => {
    await opened.browser?.close()
    opened.site?.stop()
  })
  return opened
}

/** `html` as a page the site serves. */
export const htmlPage = (html: string) => new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })

/** Starts t.js's tracker in the tab's page with `key` and `options`, sending to the site; the page's `tracker` is it then. */
export async function startTracker(tab: Tab, key: string, options: Record<string, unknown> = {}) {
  await tab.evaluate(
    ({ key, options }) => {
      const tracker = (window as any).ServiceTracker.init(key, { ingestionUrl: location.origin + '/_sl', ...options })
      ;(window as any).tracker = tracker
      tracker.start()
    },
    { key, options },
  )
}

/**
 * Logs the page's tracker out (the session after it begins with a new full snapshot), leaves the page
 * and waits for the recording to have been sent.
 */
export async function logOutAndLeave({ browser, sends }: ChromiumSite) {
  await browser.page.evaluate(() => (window as any).tracker.logout())
  await browser.page.waitForTimeout(300)
  await browser.page.goto('about:blank')
  for (let i = 0; i < 100 && !sends.some((s) => s.path === '/events'); i++) await Bun.sleep(25)
  await Bun.sleep(300)
}
