import type { Page, Request } from 'playwright-core'
import type { ConnectionStatus, ServiceTracker } from '@sightline/tracker'
import { HEARTBEAT_MS } from '@sightline/tracker/queue'
import type { TestBrowser } from './browser'

/** Typed into the checkout's gift note: it must stay masked everywhere it could end up. */
export const SECRET_NOTE = 'for Zelda, love from the quokka'
/** The words searched for (numbers or short words could turn up by chance in ids and hashes). */
export const SECRET_WORDS = ['Zelda', 'quokka']

declare global {
  interface Window {
    /** The shop's handle on the page's tracker, resolved once it has started. */
    shop: { tracker(): Promise<ServiceTracker> }
  }
}

/** Waits until the page's tracker has started (the shop's own code waits the same way). */
export async function trackerStarted(page: Page): Promise<void> {
  await page.waitForFunction(() => window.shop !== undefined)
  await page.evaluate(() => window.shop.tracker().then(() => undefined))
}

/**
 * Settles when the page's next heartbeat has been answered or has failed. Taken before a page loads:
 * the journey stays on each page until then, as a visitor would for a moment, rather than cutting the
 * request short with the next navigation.
 */
export function nextHeartbeat(page: Page): Promise<void> {
  return new Promise((resolve) => {
    const settled = (request: Request) => {
      if (!request.url().endsWith('/api/ingestion/heartbeat')) return
      page.off('requestfinished', settled).off('requestfailed', settled)
      resolve()
    }
    page.on('requestfinished', settled).on('requestfailed', settled)
  })
}

export const connectionStatus = (page: Page) => page.evaluate(() => window.shop.tracker().then((tracker) => tracker.getConnectionStatus()))

export interface JourneyResult {
  /** `getConnectionStatus()` on the checkout page, before leaving. */
  status: ConnectionStatus
}

/**
 * A visit to the shop: home, two products by client-side navigation (pushState) with an "add to
 * cart" on each, the cart by a full page load with a coupon button that throws, the checkout by
 * another full load. There the page's clock moves 30 s on so the periodic heartbeat is due (the
 * tracker's own timer fires; nobody waits 30 s), a gift note is typed, the order placed (an event,
 * a fetch, a console error). `beforeLeaving` runs then, while the session is live; then the browser
 * leaves for another site, and the unload path runs.
 */
export async function shopJourney(browser: TestBrowser, shopUrl: string, beforeLeaving?: () => Promise<void>): Promise<JourneyResult> {
  const { page } = browser
  await page.clock.install()
  let beat = nextHeartbeat(page)
  await page.goto(`${shopUrl}/`)
  await trackerStarted(page)
  await beat
  await page.click('nav >> text=Wool socks')
  await page.click('#add')
  await page.click('nav >> text=Rain hat')
  await page.click('#add')

  beat = nextHeartbeat(page)
  await Promise.all([page.waitForURL('**/cart'), page.click('nav >> text=Cart')])
  await trackerStarted(page)
  await beat
  await page.click('#coupon')

  beat = nextHeartbeat(page)
  await Promise.all([page.waitForURL('**/checkout'), page.click('nav >> text=Checkout')])
  await trackerStarted(page)
  await beat
  beat = nextHeartbeat(page)
  await page.clock.fastForward(HEARTBEAT_MS)
  await beat
  await page.locator('#gift-note').pressSequentially(SECRET_NOTE)
  await page.click('#order')
  await page.waitForSelector('text=Ordered')
  const status = await connectionStatus(page)
  await beforeLeaving?.()
  await page.goto('about:blank')
  return { status }
}
