import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { eventually } from '../tracker/helpers/e2e'
import { blockedFrom, closedAfterEach, openBrowser } from './browser'
import { coreRequests, decodeHanded } from './delivery'
import { nextHeartbeat, trackerStarted } from './journey'
import { e2eSuite } from './suite'
import { startShop, type Hit } from './shop'

/**
 * `navigator.sendBeacon` bodies need no CORS preflight, even when the relay is on another origin than
 * the page (www. and app. of one site): the tracker's beacons are text/plain with the key in the
 * body, CORS-simple requests. Counted at the relay (every request the browser made to it) and at
 * core (what the relay sent on, and core's own request log). No Playwright route is set in these
 * tests: with one, Playwright answers every preflight itself and the servers would never see it.
 */

const suite = e2eSuite()
const { coreLog } = suite

const open = closedAfterEach()

const byMethod = (hits: Hit[]) => hits.reduce<Record<string, number>>((count, hit) => ({ ...count, [hit.method]: (count[hit.method] ?? 0) + 1 }), {})

describe('beacons through the relay, in headless Chromium', () => {
  test('the unload beacons arrive with no preflight, even from another origin; a fetch with the key header is preflighted', async () => {
    const www = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const app = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'cross-origin relay', relayOrigin: www.url } }))
    const browser = open(await openBrowser({ block: [suite.e2e.base] }))
    const { page } = browser
    await blockedFrom(page, suite.e2e.base)
    const fromNow = coreLog.lines.length

    // The page's clock stands still: no batch is flushed by its timer, so all of it leaves by beacon
    // as the page unloads (the heartbeat at start is the one request made before).
    await page.clock.install()
    await page.clock.pauseAt(Date.now() + 1000)
    const beat = nextHeartbeat(page)
    await page.goto(`${app.url}/`)
    await trackerStarted(page)
    await beat
    const sessionId = await page.evaluate(async () => {
      const tracker = await window.shop.tracker()
      tracker.customEvent('left_by_beacon', { cart: 2 })
      console.error('seen just before leaving')
      return tracker.getSessionId()
    })
    await page.goto('about:blank')

    await eventually(async () => {
      expect(await suite.e2e.rows(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).toEqual([{ event_name: '$pageview' }, { event_name: 'left_by_beacon' }])
      expect(await suite.e2e.rows(sql`select message from logs where session_id = ${sessionId}`)).toEqual([{ message: 'seen just before leaving' }])
      expect(await suite.e2e.rows(sql`select has_full_snapshot from replay_chunks where session_id = ${sessionId}`)).toEqual([{ has_full_snapshot: true }])
      expect((await suite.e2e.rows<{ ended_at: unknown }>(sql`select ended_at from sessions where session_id = ${sessionId}`))[0].ended_at).not.toBeNull()
    })
    const handed = (await browser.handed(app.url)).map((request) => ({ via: request.via, path: decodeHanded(request).path }))
    expect(handed).toEqual([
      { via: 'fetch', path: '/heartbeat' },
      { via: 'beacon', path: '/customEvent/batch' },
      { via: 'beacon', path: '/logs' },
      { via: 'beacon', path: '/events' },
      { via: 'beacon', path: '/session-end' },
    ])

    // At the relay: the heartbeat (a simple text/plain fetch) and four beacons, all plain POSTs, no OPTIONS.
    const relayed = www.relayed().filter((hit) => hit.path.startsWith('/_sl/api/'))
    const [atRelay, atCore] = [byMethod(relayed), byMethod(www.upstream)]
    expect(atRelay).toEqual({ POST: 5 })
    expect(relayed.filter((hit) => hit.fetchMode === 'no-cors').map((hit) => hit.path.replace('/_sl/api/ingestion', ''))).toEqual(['/customEvent/batch', '/logs', '/events', '/session-end'])
    expect(relayed.every((hit) => hit.contentType?.startsWith('text/plain') && !hit.authorized)).toBe(true)
    // At core: the same five POSTs, each stored (200), and no preflight.
    expect(atCore).toEqual({ POST: 5 })
    expect(www.upstream.every((hit) => hit.status === 200)).toBe(true)
    expect(coreRequests(coreLog.lines.slice(fromNow)).map((r) => `${r.method} ${r.status}`)).toEqual(Array(5).fill('POST 200'))

    // The counters do see a preflight when the browser makes one: a fetch with the key in its
    // Authorization header, from the same page to the same relay.
    await page.goto(`${app.url}/`)
    await trackerStarted(page)
    const before = www.relayed().length
    const upstreamBefore = www.upstream.length
    await page.evaluate(async () => {
      const tracker = await window.shop.tracker()
      await tracker.identifyUser({ userProperties: { plan: 'pro' } })
    })
    const identify = www.relayed().slice(before).filter((hit) => hit.path === '/_sl/api/ingestion/user')
    expect(identify.map((hit) => `${hit.method} ${hit.status}`)).toEqual(['OPTIONS 204', 'POST 200'])
    expect(identify[1].authorized).toBe(true)
    expect(www.upstream.slice(upstreamBefore).filter((hit) => hit.path === '/api/ingestion/user').map((hit) => `${hit.method} ${hit.status}`)).toEqual(['OPTIONS 204', 'POST 200'])

    const show = (count: Record<string, number>) => Object.entries(count).map(([method, n]) => `${n} ${method}`).join(', ')
    console.log(
      `\nRequests by method, relay on another origin than the page: the leaving page's ${handed.length - 1} beacons and its heartbeat: ` +
        `${show(atRelay)} and no OPTIONS at the relay, ${show(atCore)} and no OPTIONS at core; ` +
        `identifyUser's fetch with the key header: ${identify.map((hit) => hit.method).join(' + ')}\n`,
    )
  })
})
