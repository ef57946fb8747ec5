import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { EVENT_FLUSH_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually, openBrowser, startE2eCore, type Browser, type E2eCore } from '../helpers/e2e'

/** Options as a site writes them, sent to a real core: what core would refuse must not cost the data. */

let e2e: E2eCore
beforeAll(async () => {
  e2e = await startE2eCore()
})
afterAll(async () => {
  await e2e.close()
})

const browsers: Browser[] = []
afterEach(async () => {
  for (const browser of browsers.splice(0)) await browser.close()
})
const open = (options: Parameters<typeof openBrowser>[1]) => {
  const browser = openBrowser(e2e.core.key, { enableAutomaticTracking: false, logLevel: 'warn', ...options })
  browser.tracker.configureLogging({ enableConsole: false })
  browsers.push(browser)
  return browser
}

describe('options a site writes loosely', () => {
  test('an ingestionUrl with a query or fragment (a cache buster, a copied link): the paths go before it, and events land', async () => {
    const { tracker, clock, requests } = open({ ingestionUrl: e2e.base + '/?v=2#sightline' })
    const { sessionId } = tracker.getUserInfo()
    tracker.customEvent('signup')
    tracker.groupIdentify('company', 'acme')
    await clock.advance(EVENT_FLUSH_MS)
    await eventually(async () => {
      expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId}`)).map((e) => e.event_name)).toEqual(['signup'])
      expect((await e2e.rows(sql`select group_key from groups where group_type = 'company'`)).length).toBe(1)
    })
    expect(requests.map((r) => r.url).sort()).toEqual([e2e.base + '/api/ingestion/customEvent/batch', e2e.base + '/api/ingestion/groupidentify'])
    expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: e2e.base, dropped: { outbox: 0, error_flood: 0 } })
  })

  test.each([
    ['a build number', 1042, '1042'],
    ["a VERSION file's text, its newline included", 'shop@1.4.2\n', 'shop@1.4.2'],
  ])('a release that is %s: error reports are stored, with the release as text', async (_label, release, stored) => {
    const { tracker, clock } = open({ ingestionUrl: e2e.base, release: release as string })
    const { sessionId } = tracker.getUserInfo()
    tracker.captureError(new Error('cart is undefined'))
    tracker.captureError(new TypeError('price is NaN'))
    await clock.advance(TELEMETRY_FLUSH_MS)
    await eventually(async () => {
      const rows = await e2e.rows<{ message: string; release: string }>(sql`select message, release from error_events where session_id = ${sessionId} order by message`)
      expect(rows.map((row) => [row.message, row.release])).toEqual([
        ['cart is undefined', stored],
        ['price is NaN', stored],
      ])
    })
    expect(tracker.viewLogs()).toEqual([])
  })
})
