import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { decodeChunk } from '@sightline/core/ingest/replay/encode'
import { REPLAY_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually } from '../tracker/helpers/e2e'
import { blockedFrom, closedAfterEach, openBrowser } from './browser'
import { coreRequests, counts, missing, perKind, produced, stored } from './delivery'
import { connectionStatus, trackerStarted } from './journey'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * Offline in a real browser (`context.setOffline`): what the page produces meanwhile is kept, a
 * reload attempted while offline fails, and the reload once back online delivers all of it through
 * the relay, each item once.
 */

const suite = e2eSuite()
const { coreLog } = suite

const open = closedAfterEach()

describe('offline, then a reload, in headless Chromium', () => {
  test('nothing produced offline is lost, and nothing is stored twice', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const browser = open(await openBrowser({ block: [suite.e2e.base] }))
    const { page, context } = browser
    await blockedFrom(page, suite.e2e.base)
    await page.clock.install()
    await page.goto(`${shop.url}/`)
    await trackerStarted(page)
    const sessionId = await page.evaluate(() => window.shop.tracker().then((tracker) => tracker.getSessionId()))
    await eventually(async () => expect(await suite.e2e.rows(sql`select event_name from events where session_id = ${sessionId}`)).toEqual([{ event_name: '$pageview' }]))
    const handedOnline = (await browser.handed(shop.url)).length

    // Offline: two products (pushState), one added to the cart, a console error, a replay flush.
    await context.setOffline(true)
    expect(await page.evaluate(() => navigator.onLine)).toBe(false)
    await page.click('nav >> text=Wool socks')
    await page.click('nav >> text=Rain hat')
    await page.click('#add')
    await page.evaluate(() => console.error('checked out while offline'))
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    // Kept: the batches of events, the log and the replay chunk.
    await eventually(async () => expect((await connectionStatus(page)).queued).toBeGreaterThanOrEqual(3))
    expect(await connectionStatus(page)).toMatchObject({ online: false, reachable: true, recommendations: ['Offline: data is kept until back online'] })
    // The tracker handed nothing to the network meanwhile: it kept it.
    expect(await browser.handed(shop.url)).toHaveLength(handedOnline)

    // A reload while offline fails (the page goes, its unload path runs offline); back online, the
    // reload brings the shop back and its tracker sends what the last page kept.
    expect(await page.reload().then(() => 'loaded', (error: Error) => error.message)).toContain('ERR_INTERNET_DISCONNECTED')
    await context.setOffline(false)
    await page.reload()
    expect(page.url()).toBe(`${shop.url}/products/rain-hat`)
    await trackerStarted(page)
    await eventually(async () => expect(await connectionStatus(page)).toMatchObject({ online: true, queued: 0 }))
    await page.goto('about:blank')

    const visit = produced(await browser.handed(shop.url))
    expect(visit.sessions).toEqual([sessionId])
    let got = await stored(suite.e2e, visit.sessions, coreRequests(coreLog.lines))
    await eventually(async () => {
      got = await stored(suite.e2e, visit.sessions, coreRequests(coreLog.lines))
      expect(missing(visit.ledger, got)).toEqual(perKind(() => []))
    })
    expect(counts(got)).toEqual(counts(visit.ledger))

    // What the page produced offline, by name: every event, the log, every replay chunk of the tab.
    const events = await suite.e2e.rows<{ event_name: string; path: string | null }>(sql`select event_name, properties->>'path' as path from events where session_id = ${sessionId} order by timestamp, event_name`)
    expect(events.filter((e) => e.event_name === '$pageview').map((e) => e.path)).toEqual(['/', '/products/wool-socks', '/products/rain-hat', '/products/rain-hat'])
    expect(events.filter((e) => e.event_name === 'add_to_cart')).toHaveLength(1)
    expect(await suite.e2e.rows(sql`select message from logs where session_id = ${sessionId}`)).toEqual([{ message: 'checked out while offline' }])
    const chunks = await suite.e2e.rows<{ seq: number; data: Uint8Array }>(sql`select seq, data from replay_chunks where session_id = ${sessionId} order by seq`)
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i))

    // Nothing twice: one row per event uuid and per chunk, and no replay event in two chunks.
    expect(counts(got)['custom events']).toBe(events.length)
    expect(counts(got)['replay chunks']).toBe(chunks.length)
    const replayed = chunks.flatMap((c) => decodeChunk(c.data).map((event) => JSON.stringify(event)))
    expect(new Set(replayed).size).toBe(replayed.length)
  })
})
