import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { STORAGE_REFUSED } from '@sightline/tracker/diagnostics'
import { EVENT_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { connectionStatus, trackerStarted } from './journey'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * Browser storage the tracker cannot use, in headless Chromium, through the relay: all cookies
 * blocked (localStorage and sessionStorage then throw SecurityError), or a localStorage the site has
 * filled (every write throws QuotaExceededError). The tracker goes on in memory, says so, throws
 * nothing into the page, and what it keeps while offline goes once the browser is back online.
 */

const suite = e2eSuite()
const open = closedAfterEach()

/**
 * Fills the origin's localStorage before any page script, as a site that keeps a lot there would:
 * values of halving sizes under keys of one character, until not even one more character fits.
 */
const FILL_LOCAL_STORAGE = `(() => {
  try { if (localStorage.length) return } catch { return }
  for (let size = 1 << 20, n = 0; size >= 1; ) {
    try { localStorage.setItem(String.fromCharCode(0x4e00 + n++), 'x'.repeat(size)) } catch { size = Math.floor(size / 2) }
  }
})()`

const SETUPS = [
  { what: 'all cookies blocked (storage access throws SecurityError)', blockCookies: true, fill: false, error: 'SecurityError' },
  { what: 'a localStorage the site has filled (every write throws QuotaExceededError)', blockCookies: false, fill: true, error: 'QuotaExceededError' },
] as const

describe('storage the tracker cannot use, in headless Chromium', () => {
  for (const setup of SETUPS) {
    test(`${setup.what}: it goes on in memory, says so, throws nothing, and what it kept offline goes once online`, async () => {
      const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
      const { page, context } = open(await openBrowser({ blockCookies: setup.blockCookies }))
      if (setup.fill) await context.addInitScript({ content: FILL_LOCAL_STORAGE })
      const pageErrors: string[] = []
      page.on('pageerror', (error) => pageErrors.push(error.message))
      await page.goto(`${shop.url}/products/wool-socks`)
      await trackerStarted(page)
      expect(await page.evaluate(() => {
        try {
          localStorage.setItem('probe', '1')
          return 'written'
        } catch (error) {
          return (error as Error).name
        }
      })).toBe(setup.error)

      const sessionId = await page.evaluate(() => window.shop.tracker().then((tracker) => tracker.getSessionId()))
      await eventually(async () => expect(await suite.e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = '$pageview'`)).toHaveLength(1))
      expect((await connectionStatus(page)).recommendations).toEqual([STORAGE_REFUSED])
      const logs = await page.evaluate(() => window.shop.tracker().then((tracker) => tracker.viewLogs().map((entry) => entry.message)))
      expect(logs).toEqual([STORAGE_REFUSED])

      await context.setOffline(true)
      await page.click('#add')
      await page.click('#add')
      await eventually(async () => expect((await connectionStatus(page)).queued).toBeGreaterThanOrEqual(1))
      await page.waitForTimeout(EVENT_FLUSH_MS)
      await context.setOffline(false)
      await eventually(async () => {
        expect((await connectionStatus(page)).queued).toBe(0)
        expect(await suite.e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = 'add_to_cart'`)).toHaveLength(2)
      })
      expect(await page.evaluate(() => window.shop.tracker().then((tracker) => tracker.getSessionId()))).toBe(sessionId)
      expect(pageErrors).toEqual([])
    })
  }
})
