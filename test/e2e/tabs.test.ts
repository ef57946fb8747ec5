import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Page } from 'playwright-core'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { decodeHanded } from './delivery'
import { connectionStatus, trackerStarted } from './journey'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * Several tabs of one site at once, in headless Chromium, through the relay: they share the session
 * and the outbox (localStorage), each has a window of its own (sessionStorage), a tab opened from
 * another starts with a copy of its sessionStorage, and a logout in one is a logout in all.
 */

const suite = e2eSuite()
const open = closedAfterEach()

/** Who a tab's tracker says it is. */
const who = (page: Page) =>
  page.evaluate(() =>
    window.shop.tracker().then((tracker) => {
      const { sessionId, endUserId, windowId } = tracker.getUserInfo()
      return { sessionId, endUserId, windowId }
    }),
  )

async function openTab(page: Page, url: string) {
  await page.goto(url)
  await trackerStarted(page)
  return page
}

describe('tabs of one site, in headless Chromium', () => {
  test('one session, a window per tab (a tab opened as a copy of another too); a logout in one tab is every tab\'s, and their replay opens with a full snapshot in the new session', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const { context, page } = open(await openBrowser())
    const a = await openTab(page, `${shop.url}/`)
    const b = await openTab(await context.newPage(), `${shop.url}/products/wool-socks`)
    // A tab the page opens starts with a copy of its opener's sessionStorage, as a duplicated tab does.
    await a.evaluate(() => sessionStorage.setItem('opened-from', 'a'))
    const [c] = await Promise.all([context.waitForEvent('page'), a.evaluate(() => void window.open('/cart'))])
    await c.waitForLoadState()
    await trackerStarted(c)
    expect(await c.evaluate(() => sessionStorage.getItem('opened-from'))).toBe('a')

    const [inA, inB, inC] = await Promise.all([a, b, c].map(who))
    expect([inB.sessionId, inC.sessionId]).toEqual([inA.sessionId, inA.sessionId])
    expect([inB.endUserId, inC.endUserId]).toEqual([inA.endUserId, inA.endUserId])
    expect(new Set([inA.windowId, inB.windowId, inC.windowId]).size).toBe(3)

    // A logout in tab a; then a click in tab b, which sends as the new anonymous user, in the new session.
    await a.evaluate(() => window.shop.tracker().then((tracker) => tracker.logout()))
    const loggedOut = await who(a)
    expect(loggedOut.sessionId).not.toBe(inA.sessionId)
    expect(loggedOut.endUserId).not.toBe(inA.endUserId)
    await b.click('#add')
    await eventually(async () => {
      expect(await suite.e2e.rows(sql`select session_id, end_user_id from events where event_name = 'add_to_cart'`)).toEqual([{ session_id: loggedOut.sessionId, end_user_id: loggedOut.endUserId }])
      // Tab b's window in the new session opens with a full snapshot.
      const chunks = await suite.e2e.rows<{ has_full_snapshot: boolean }>(
        sql`select has_full_snapshot from replay_chunks where session_id = ${loggedOut.sessionId} and window_id = ${inB.windowId} order by seq`,
      )
      expect(chunks.length).toBeGreaterThan(0)
      expect(chunks[0].has_full_snapshot).toBe(true)
    }, 15_000)
  })

  test('offline in two tabs, then online: both drain the outbox they share at once, and every item is sent once and stored once', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const browser = open(await openBrowser())
    const { context, page } = browser
    const a = await openTab(page, `${shop.url}/products/wool-socks`)
    const b = await openTab(await context.newPage(), `${shop.url}/products/rain-hat`)
    const { sessionId } = await who(a)
    await eventually(async () => expect(await suite.e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = '$pageview'`)).toHaveLength(2))

    await context.setOffline(true)
    const handedBefore = await Promise.all([a, b].map(async (tab) => (await tab.evaluate(() => Number(sessionStorage.getItem('sightline-test:handed') || 0)))))
    for (let i = 0; i < 5; i++) {
      for (const tab of [a, b]) {
        await tab.click('#add')
        await tab.waitForTimeout(150)
      }
    }
    await eventually(async () => expect((await connectionStatus(a)).queued).toBeGreaterThanOrEqual(10))
    await context.setOffline(false)

    await eventually(async () => {
      for (const tab of [a, b]) expect((await connectionStatus(tab)).queued).toBe(0)
      expect(await suite.e2e.rows(sql`select 1 from events where session_id = ${sessionId} and event_name = 'add_to_cart'`)).toHaveLength(10)
    }, 15_000)
    // What the two tabs handed to the network once online: each event once.
    const sentOnline = (
      await Promise.all(
        [a, b].map(async (tab, i) => {
          const all = await tab.evaluate((key) => Array.from({ length: Number(sessionStorage.getItem(key) || 0) }, (_, n) => JSON.parse(sessionStorage.getItem(`${key}:${n}`)!)), 'sightline-test:handed')
          return all.slice(handedBefore[i]).map((entry: { url: string; body: string; gzip: boolean; via: 'fetch' | 'beacon' }) => decodeHanded({ ...entry, body: new Uint8Array(Buffer.from(entry.body, 'base64')) }))
        }),
      )
    ).flat()
    const events = sentOnline.filter((request) => request.path === '/customEvent/batch').flatMap((request) => request.body.events as { uuid: string; eventName: string }[])
    expect(events.filter((event) => event.eventName === 'add_to_cart')).toHaveLength(10)
    expect(new Set(events.map((event) => event.uuid)).size).toBe(events.length)
    const chunks = sentOnline.filter((request) => request.path === '/events').map((request) => `${request.body.windowId}#${request.body.seq}`)
    expect(chunks.length).toBeGreaterThan(0)
    expect(new Set(chunks).size).toBe(chunks.length)
  })
})
