import { afterAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { decodeChunk } from '@sightline/core/ingest/replay/encode'
import { eventually } from '../tracker/helpers/e2e'
import { blockedFrom, closedAfterEach, openBrowser } from './browser'
import { coreRequests, counts, decodeHanded, deliveryTable, missing, perKind, produced, storedTextContaining, stored, type DeliveryColumn } from './delivery'
import { SECRET_NOTE, SECRET_WORDS, shopJourney } from './journey'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * The product's promise in a real browser: with an ad blocker's list blocking core's own origin, the
 * tracker loaded through the relay (`/_sl/t.js`, nothing but the key) still delivers everything the
 * page produced; the same page sending to core directly loses it all, and says so.
 */

const suite = e2eSuite()
const { coreLog } = suite
afterAll(() => {
  if (columns.length) console.log(`\nDelivery in headless Chromium, core's origin on the blocklist:\n\n${deliveryTable(columns)}\n`)
})

const open = closedAfterEach()

const columns: DeliveryColumn[] = []
const NOTHING_MISSING = perKind(() => [])

/** Core's request log from now on: what core itself answered. */
function coreRequestsFromNow() {
  const from = coreLog.lines.length
  return () => coreRequests(coreLog.lines.slice(from))
}

describe('a shop visit in headless Chromium, core on the blocklist', () => {
  test('through the relay: 100% of what the page produced is stored, the typed note nowhere', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const browser = open(await openBrowser({ block: [suite.e2e.base] }))
    await blockedFrom(browser.page, suite.e2e.base)
    const requests = coreRequestsFromNow()

    const { status } = await shopJourney(browser, shop.url, async () => {
      // On the checkout page, after the periodic heartbeat: the window is present there, the session live.
      const [sessionId] = produced(await browser.handed(shop.url)).sessions
      await eventually(async () => {
        const presence = await suite.e2e.rows(sql`select p.url, s.ended_at from presence p join sessions s using (project_id, session_id) where p.session_id = ${sessionId}`)
        expect(presence).toEqual([{ url: `${shop.url}/checkout`, ended_at: null }])
      })
    })
    expect(status).toMatchObject({ ingestionUrl: `${shop.url}/_sl`, source: 'script', blocked: false, reachable: true, online: true, queued: 0, recommendations: [] })

    const handed = await browser.handed(shop.url)
    const page = produced(handed)
    expect(page.sessions).toHaveLength(1)
    const [sessionId] = page.sessions
    const sent = counts(page.ledger)
    // Three page loads (each a full snapshot, a heartbeat and a goodbye) and the periodic heartbeat.
    expect(sent).toMatchObject({ logs: 1, 'error reports': 1, spans: 1, 'network errors': 0, heartbeats: 4, 'session ends': 3 })
    expect(sent['replay chunks']).toBeGreaterThanOrEqual(3)
    // One heartbeat as each page starts, and the checkout's periodic one, 30 s (of the page's clock) on.
    const beats = handed.map(decodeHanded).filter((request) => request.path === '/heartbeat')
    expect(beats.map((request) => new URL(request.body.url).pathname)).toEqual(['/', '/cart', '/checkout', '/checkout'])

    let got = await stored(suite.e2e, page.sessions, requests())
    await eventually(async () => {
      got = await stored(suite.e2e, page.sessions, requests())
      expect(missing(page.ledger, got)).toEqual(NOTHING_MISSING)
    })
    expect(counts(got)).toEqual(sent)
    columns.push({ label: 'through the relay', sent: page.ledger, stored: got })

    // The session: entered on the home page, ended when the browser left.
    const [session] = await suite.e2e.rows<{ entry_url: string; ended_at: unknown; user_agent: string }>(sql`select entry_url, ended_at, user_agent from sessions where session_id = ${sessionId}`)
    expect(session.entry_url).toBe(`${shop.url}/`)
    expect(session.ended_at).not.toBeNull()
    expect(session.user_agent).toContain('HeadlessChrome')
    expect(await suite.e2e.rows(sql`select 1 from presence where session_id = ${sessionId}`)).toEqual([])

    // Events: page views (pushState and full loads), navigations, the shop's own events, clicks.
    const events = await suite.e2e.rows<{ event_name: string; properties: any }>(sql`select event_name, properties from events where session_id = ${sessionId} order by timestamp, event_name`)
    const named = (name: string) => events.filter((e) => e.event_name === name).map((e) => e.properties)
    expect(named('$pageview').map((p) => p.path)).toEqual(['/', '/products/wool-socks', '/products/rain-hat', '/cart', '/checkout'])
    expect(named('$navigation').map((p) => [p.type, new URL(p.to).pathname])).toEqual([['push', '/products/wool-socks'], ['push', '/products/rain-hat']])
    expect(named('add_to_cart')).toEqual([{ sku: 'wool-socks', price: 12 }, { sku: 'rain-hat', price: 30 }])
    expect(named('order_placed')).toEqual([{ items: 1, total: 12 }])
    expect(named('$click').length).toBeGreaterThanOrEqual(7)

    // The uncaught error, grouped into an Issue; the console error as a log; the shop's API call as a span.
    const errors = await suite.e2e.rows<{ name: string; message: string; handled: boolean; title: string; occurrences: number }>(sql`
      select e.name, e.message, e.handled, i.title, i.occurrences::int as occurrences from error_events e join issues i using (project_id, issue_id) where e.session_id = ${sessionId}`)
    expect(errors).toEqual([{ name: 'TypeError', message: 'coupon service returned no discount', handled: false, title: expect.stringContaining('coupon service returned no discount'), occurrences: 1 }])
    expect(await suite.e2e.rows(sql`select level, message from logs where session_id = ${sessionId}`)).toEqual([{ level: 'error', message: 'payment widget failed to load: timeout after 3000 ms' }])
    expect(await suite.e2e.rows(sql`select name from spans where session_id = ${sessionId}`)).toEqual([{ name: 'GET /api/stock' }])

    // Replay: a full snapshot per page load, incremental chunks, no chunk missing from the tab's sequence.
    const chunks = await suite.e2e.rows<{ seq: number; has_full_snapshot: boolean; data: Uint8Array }>(sql`select seq, has_full_snapshot, data from replay_chunks where session_id = ${sessionId} order by seq`)
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i))
    expect(chunks.filter((c) => c.has_full_snapshot)).toHaveLength(3)
    expect(chunks.some((c) => !c.has_full_snapshot)).toBe(true)
    // The last chunk left by beacon as the page unloaded, and holds the typing, masked.
    const last = chunks.at(-1)!
    const lastHanded = handed.filter((request) => request.url.endsWith('/api/ingestion/events')).at(-1)!
    expect(lastHanded.via).toBe('beacon')
    expect(JSON.parse(new TextDecoder().decode(lastHanded.body)).seq).toBe(last.seq)
    const typed = (decodeChunk(last.data) as { type: number; data: { source?: number; text?: string } }[]).filter((e) => e.type === 3 && e.data.source === 5)
    expect(typed.at(-1)!.data.text).toBe(SECRET_NOTE.replace(/\S/g, '*'))

    // The note is nowhere: not in what left the page, not in any table, not in any replay chunk. The
    // same search finds what is meant to be there, so it does read what it searches.
    expect(page.texts.filter((text) => SECRET_WORDS.some((word) => text.toLowerCase().includes(word.toLowerCase())))).toEqual([])
    expect(await storedTextContaining(suite.e2e, SECRET_WORDS)).toEqual([])
    expect(await storedTextContaining(suite.e2e, ['add_to_cart', 'gift-note'])).toEqual(expect.arrayContaining([expect.stringMatching(/^public\.events row/), expect.stringMatching(/^replay chunk/)]))

    // Everything went through the relay: no CORS preflight, beacons as plain POSTs, every answer a
    // success, and core saw nothing the relay did not send it. (A fetch cut short by a full page load
    // may add a GET /health/simple, the tracker's probe.)
    const relayed = shop.relayed()
    expect(relayed.filter((hit) => hit.method === 'OPTIONS')).toEqual([])
    expect(relayed.filter((hit) => hit.method === 'POST' && hit.fetchMode === 'no-cors').length).toBe(handed.filter((request) => request.via === 'beacon').length)
    expect(shop.upstream.filter((hit) => hit.status !== 200)).toEqual([])
    expect(requests().length).toBe(shop.upstream.filter((hit) => hit.path.startsWith('/api/ingestion/')).length)
  })

  test('control: the same page sending to core directly loses everything, and getConnectionStatus says so', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'direct', ingestionUrl: suite.e2e.base } }))
    const browser = open(await openBrowser({ block: [suite.e2e.base] }))
    await blockedFrom(browser.page, suite.e2e.base)
    const requests = coreRequestsFromNow()

    const { status } = await shopJourney(browser, shop.url)
    expect(status).toMatchObject({ ingestionUrl: suite.e2e.base, source: 'option', blocked: false, reachable: false, online: true })
    expect(status.recommendations).toEqual([expect.stringMatching(/^No answer from .*: the service is down, or blocked; load the tracker through the relay/)])

    const handed = await browser.handed(shop.url)
    const page = produced(handed)
    expect(counts(page.ledger)).toMatchObject({ logs: 1, 'error reports': 1, spans: 1, heartbeats: 4, 'session ends': 3 })
    // Time enough for anything that got through (the relay's deliveries land within a second).
    await Bun.sleep(1500)
    const got = await stored(suite.e2e, page.sessions, requests())
    expect(counts(got)).toEqual(perKind(() => 0))
    expect(requests()).toEqual([])
    expect(shop.relayed().filter((hit) => hit.path.startsWith('/_sl/api/'))).toEqual([])
    columns.push({ label: 'direct to core', sent: page.ledger, stored: got })
  })

  test('without the blocklist the direct setup delivers everything: the loss above is the blocklist', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'direct', ingestionUrl: suite.e2e.base } }))
    const browser = open(await openBrowser())
    const requests = coreRequestsFromNow()

    const { status } = await shopJourney(browser, shop.url)
    expect(status).toMatchObject({ ingestionUrl: suite.e2e.base, blocked: false, reachable: true, recommendations: [] })
    const handed = await browser.handed(shop.url)
    const page = produced(handed)
    let got = await stored(suite.e2e, page.sessions, requests())
    await eventually(async () => {
      got = await stored(suite.e2e, page.sessions, requests())
      expect(counts(got)).toEqual(counts(page.ledger))
    })
    expect(missing(page.ledger, got)).toEqual(NOTHING_MISSING)
    columns.push({ label: 'direct, no blocklist', sent: page.ledger, stored: got })
  })
})
