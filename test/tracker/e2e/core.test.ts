import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { registerLiveViewer } from '@sightline/core/ingest/presence/store'
import { EVENT_FLUSH_MS, HEARTBEAT_MS, REPLAY_FLUSH_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import type { FetchFunction } from '@sightline/tracker'
import { randomHex } from '@sightline/tracker/ids'
import { settle } from '../helpers/clock'
import { keptParcels, storageOf } from '../helpers/dom'
import { blockAuthorizedFetch, eventually, openBrowser, startE2eCore, type Browser, type E2eCore } from '../helpers/e2e'

/** The tracker in happy-dom sending straight to a real core (cross-origin, so with CORS), rows checked in the database. */

let e2e: E2eCore
let api: ReturnType<typeof Bun.serve>
beforeAll(async () => {
  e2e = await startE2eCore()
  // The page's own API, to fail a request on purpose.
  api = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const headers = { 'access-control-allow-origin': request.headers.get('origin') ?? '*' }
      return request.method === 'OPTIONS' ? new Response(null, { status: 204, headers }) : new Response('down', { status: 502, headers })
    },
  })
})
afterAll(async () => {
  api.stop(true)
  await e2e.close()
})

const browsers: Browser[] = []
afterEach(async () => {
  for (const browser of browsers.splice(0)) await browser.close()
})
const open = (...args: Parameters<typeof openBrowser>) => {
  const browser = openBrowser(...args)
  browsers.push(browser)
  return browser
}
const directly = (options: Parameters<typeof openBrowser>[1] = {}, browser: Parameters<typeof openBrowser>[2] = {}) =>
  open(e2e.core.key, { ingestionUrl: e2e.base, ...options }, browser)

const PAGE = `<!doctype html><html><head><title>Shop</title></head><body>
  <h1 class="public">Welcome back</h1><p id="secret">SECRET-BALANCE 1234</p>
  <input id="email" value=""><button id="buy">Buy</button></body></html>`

describe('straight to core', () => {
  test('every kind of message lands in its table', async () => {
    const b = directly({ release: 'web@7', redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.public'] } }, { html: PAGE })
    const { tracker, win, clock } = b
    win.console.error = () => {}
    tracker.start()
    await settle()
    const { sessionId, endUserId, windowId } = tracker.getUserInfo()
    tracker.customEvent('signup', { plan: 'pro' })
    await tracker.identifyUser({ userProperties: { email: 'ada@example.com', name: 'Ada' } })
    tracker.groupIdentify('company', 'acme', { seats: 12 })
    tracker.captureError(new TypeError('cart is undefined'), { step: 'pay' })
    win.console.error('payment widget failed')
    await win.fetch(`http://127.0.0.1:${api.port}/api/stock`).catch(() => {})
    const email = win.document.getElementById('email') as HTMLInputElement
    email.value = 'SECRET-TYPED@example.com'
    email.dispatchEvent(new win.Event('input', { bubbles: true }))
    win.document.getElementById('buy')!.dispatchEvent(new win.MouseEvent('click', { bubbles: true }))
    await clock.advance(REPLAY_FLUSH_MS)
    await settle()

    await eventually(async () => {
      const events = await e2e.rows<{ event_name: string; properties: any; end_user_id: string }>(sql`select event_name, properties, end_user_id from events where session_id = ${sessionId} order by event_name`)
      expect(events.map((e) => e.event_name)).toEqual(['$click', '$pageview', 'signup'])
      expect(events.find((e) => e.event_name === 'signup')).toMatchObject({ properties: { plan: 'pro' }, end_user_id: endUserId })
    })
    await eventually(async () => {
      expect(await e2e.rows(sql`select attributes from end_users where end_user_id = ${endUserId}`)).toEqual([{ attributes: { email: 'ada@example.com', name: 'Ada' } }])
      expect(await e2e.rows(sql`select g.properties, m.end_user_id from groups g join group_members m using (project_id, group_type, group_key) where g.group_key = 'acme'`)).toEqual([
        { properties: { seats: 12 }, end_user_id: endUserId },
      ])
    })
    await clock.advance(TELEMETRY_FLUSH_MS)
    await eventually(async () => {
      const errors = await e2e.rows<{ name: string; message: string; release: string; handled: boolean; context: any }>(sql`select name, message, release, handled, context from error_events where session_id = ${sessionId}`)
      expect(errors).toEqual([{ name: 'TypeError', message: 'cart is undefined', release: 'web@7', handled: true, context: { step: 'pay' } }])
      // (happy-dom also logs the 502 to console.error, as a browser's devtools would show it)
      expect(await e2e.rows(sql`select level, message from logs where session_id = ${sessionId}`)).toContainEqual({ level: 'error', message: 'payment widget failed' })
      const failed = await e2e.rows<{ method: string; status: number; error_type: string; url: string }>(sql`select method, status, error_type, url from network_errors where session_id = ${sessionId}`)
      expect(failed).toEqual([{ method: 'GET', status: 502, error_type: 'http', url: `http://127.0.0.1:${api.port}/api/stock` }])
      const spans = await e2e.rows<{ name: string; kind: string; status_code: string }>(sql`select name, kind, status_code from spans where session_id = ${sessionId}`)
      expect(spans).toEqual([{ name: 'GET /api/stock', kind: 'client', status_code: 'error' }])
    })
    await eventually(async () => {
      const [session] = await e2e.rows<{ end_user_id: string; entry_url: string; automatic_properties: any; window_ids: string[] }>(
        sql`select end_user_id, entry_url, automatic_properties, window_ids from sessions where session_id = ${sessionId}`,
      )
      expect(session).toMatchObject({ end_user_id: endUserId, entry_url: 'http://shop.test/', window_ids: [windowId] })
      expect(session.automatic_properties).toMatchObject({ language: 'en-US', timezone: expect.any(String) })
      const replay = await e2e.replay(sessionId)
      expect(replay.map((e) => e.type)).toContain(2)
      const text = JSON.stringify(replay)
      expect(text).toContain('Welcome back')
      expect(text).not.toContain('SECRET')
      expect(await e2e.rows(sql`select window_id from presence where session_id = ${sessionId}`)).toEqual([{ window_id: windowId }])
    })
    // Nothing stored anywhere holds the masked text.
    const stored = await e2e.rows(sql`select (select json_agg(e) from events e) as a, (select json_agg(l) from logs l) as b, (select json_agg(x) from error_events x) as c`)
    expect(JSON.stringify(stored)).not.toContain('SECRET')
  })

  test('leaving the page: the last chunk and events by beacon (text/plain, key in the body), then session-end', async () => {
    const { tracker, win, clock } = directly({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    const { sessionId, windowId } = tracker.getUserInfo()
    await clock.advance(REPLAY_FLUSH_MS)
    await eventually(async () => expect(await e2e.rows(sql`select 1 from presence where session_id = ${sessionId}`)).toHaveLength(1))
    tracker.customEvent('last words')
    tracker.addEvent({ goodbye: true })
    win.dispatchEvent(new win.Event('pagehide'))
    await eventually(async () => {
      expect(await e2e.rows(sql`select event_name from events where session_id = ${sessionId}`)).toEqual([{ event_name: 'last words' }])
      const replay = await e2e.replay(sessionId)
      expect(replay.at(-1)).toMatchObject({ type: 5, data: { tag: 'custom', payload: { goodbye: true } } })
      expect(await e2e.rows(sql`select 1 from presence where session_id = ${sessionId} and window_id = ${windowId}`)).toEqual([])
      const [session] = await e2e.rows<{ ended: boolean }>(sql`select ended_at is not null as ended from sessions where session_id = ${sessionId}`)
      expect(session.ended).toBe(true)
    })
  })

  test('sticky-beacon: with the Authorization fetch blocked, sends go by beacon and land; a full snapshot larger than a beacon may carry goes as a CORS-simple fetch', async () => {
    // Text that hardly compresses, shown in visibility-first mode: the full snapshot is about 100 KB gzipped.
    const text = randomHex(100_000)
    const { tracker, clock, requests } = directly(
      { enableAutomaticTracking: false, redactionStrategy: { mode: 'visibility-first' } },
      { fetch: blockAuthorizedFetch, compression: true, html: `<!doctype html><html><body><p id="long">${text}</p></body></html>` },
    )
    tracker.start()
    await settle()
    const { sessionId } = tracker.getUserInfo()
    tracker.customEvent('through the blocker')
    await clock.advance(REPLAY_FLUSH_MS)
    tracker.customEvent('and again')
    // Fetch is taken for blocked at its third failure in a row: the retries run on the page's clock.
    await eventually(async () => {
      await clock.advance(1000)
      expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).map((e) => e.event_name)).toEqual(['and again', 'through the blocker'])
      const snapshots = (await e2e.replay(sessionId)).filter((e) => e.type === 2)
      expect(snapshots).toHaveLength(1)
      expect(JSON.stringify(snapshots[0])).toContain(text)
    })
    expect(tracker.getConnectionStatus()).toMatchObject({ blocked: true, transport: 'beacon', queued: 0 })
    // Blocked fetches never reach the page's fetch: what did is beacons, and the one snapshot as a simple fetch.
    const sent = (path: string) => requests.filter((r) => r.method === 'POST' && r.url.includes(path)).map((r) => [r.via, new URL(r.url).search])
    expect(sent('/customEvent/batch').length).toBeGreaterThan(0)
    expect(sent('/customEvent/batch').every(([via]) => via === 'beacon')).toBe(true)
    expect(sent('/events').filter(([via]) => via === 'fetch')).toEqual([['fetch', '?compression=gzip']])
  })

  test('a value core refuses in one item (properties nested too deep, a name of NUL alone) loses that item only: the others of its batch are stored', async () => {
    const { tracker, clock } = directly({ enableAutomaticTracking: false })
    const { sessionId } = tracker.getUserInfo()
    let deep: Record<string, unknown> = {}
    for (let i = 0; i < 600; i++) deep = { deep }
    tracker.customEvent('before', { n: 1 })
    tracker.customEvent('too deep', deep)
    tracker.customEvent('\0')
    tracker.customEvent('after', { n: 2 })
    tracker.captureError(new Error('first'))
    tracker.captureError(new Error('with a deep context'), deep)
    tracker.captureError(new Error('last'))
    await clock.advance(TELEMETRY_FLUSH_MS)
    await eventually(async () => {
      expect((await e2e.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId}`)).map((e) => e.event_name).sort()).toEqual(['after', 'before'])
      expect((await e2e.rows<{ message: string }>(sql`select message from error_events where session_id = ${sessionId}`)).map((e) => e.message).sort()).toEqual(['first', 'last'])
    })
    expect(tracker.getConnectionStatus().dropped).toMatchObject({ rejected_400: 3 })
  })

  test('a resend after a lost answer is stored once (event uuids, chunk hashes)', async () => {
    // Core stores each first attempt, but the browser never sees the answer, and the tracker sends
    // the same body again: core gets every item twice.
    const seen = new Set<string>()
    const losing = (real: FetchFunction): FetchFunction => async (input, init) => {
      const response = await real(input, init)
      const key = `${String(input)} ${init?.body instanceof Uint8Array ? init.body.byteLength : String(init?.body).length}`
      if (init?.method === 'POST' && !seen.has(key)) {
        seen.add(key)
        throw new TypeError('network changed')
      }
      return response
    }
    const { tracker, clock } = directly({ enableAutomaticTracking: false }, { fetch: losing })
    const { sessionId } = tracker.getUserInfo()
    tracker.start()
    await settle()
    for (const name of ['one', 'two', 'three']) tracker.customEvent(name)
    await clock.advance(REPLAY_FLUSH_MS)
    await clock.advance(60_000)
    await eventually(async () => {
      expect(await e2e.rows(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).toEqual([{ event_name: 'one' }, { event_name: 'three' }, { event_name: 'two' }])
      const chunks = await e2e.rows<{ n: number }>(sql`select count(*)::int as n from replay_chunks where session_id = ${sessionId}`)
      expect(chunks[0].n).toBe(1)
      // Core commits before its answer reaches the page: the rows can be read before the wrapper has
      // seen the answer it drops.
      expect(seen.size).toBeGreaterThanOrEqual(2)
    })
  })

  test('offline, a reload, then online: every event and chunk stored, none twice', async () => {
    const first = directly({ enableAutomaticTracking: false }, { offline: true })
    first.tracker.start()
    await settle()
    const { sessionId } = first.tracker.getUserInfo()
    for (const name of ['a', 'b']) first.tracker.customEvent(name)
    await first.clock.advance(REPLAY_FLUSH_MS)
    first.tracker.addEvent({ before: 'reload' })
    first.win.dispatchEvent(new first.win.Event('pagehide'))
    await settle()
    const storage = storageOf(first.win)
    await first.close()
    browsers.splice(browsers.indexOf(first), 1)

    const second = directly({ enableAutomaticTracking: false }, { offline: true, storage, clock: first.clock })
    second.tracker.customEvent('c')
    await second.clock.advance(EVENT_FLUSH_MS)
    expect(second.requests.filter((r) => r.method === 'POST')).toEqual([])
    expect(second.tracker.getSessionId()).toBe(sessionId)

    Object.defineProperty(second.win.navigator, 'onLine', { value: true, configurable: true })
    second.win.dispatchEvent(new second.win.Event('online'))
    await eventually(async () => {
      expect(await e2e.rows(sql`select event_name from events where session_id = ${sessionId} order by event_name`)).toEqual([{ event_name: 'a' }, { event_name: 'b' }, { event_name: 'c' }])
      const replay = await e2e.replay(sessionId)
      expect(replay.filter((e) => e.type === 2)).toHaveLength(1)
      expect(replay.at(-1)).toMatchObject({ type: 5, data: { payload: { before: 'reload' } } })
    })
    // The same parcels again (another tab draining too, say): stored once all the same.
    for (const parcel of keptParcels(storage.localStorage, e2e.core.key)) {
      const answer = await e2e.core.post(parcel.path, parcel.body)
      expect(answer.status).toBe(200)
    }
    expect(await e2e.rows(sql`select count(*)::int as n from events where session_id = ${sessionId}`)).toEqual([{ n: 3 }])
    const seqs = await e2e.rows<{ seq: number }>(sql`select seq from replay_chunks where session_id = ${sessionId} order by seq`)
    expect(new Set(seqs.map((s) => s.seq)).size).toBe(seqs.length)
  })

  test('testConnection calls init, the only caller of it', async () => {
    const { tracker } = directly()
    expect(await tracker.testConnection()).toMatchObject({ ok: true, status: 200, ingestionUrl: e2e.base, blocked: false })
    expect(await e2e.rows(sql`select session_id from sessions where session_id = ${tracker.getSessionId()}`)).toHaveLength(1)
  })

  test('a live viewer makes replay go every 150 ms, learned from the heartbeat', async () => {
    const { tracker, clock } = directly({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    const sessionId = tracker.getSessionId()
    await clock.advance(REPLAY_FLUSH_MS)
    await eventually(async () => expect(await e2e.rows(sql`select 1 from replay_chunks where session_id = ${sessionId}`)).toHaveLength(1))
    expect(await registerLiveViewer(e2e.core.database.db, e2e.core.project.projectId, sessionId)).toBe(true)
    await clock.advance(HEARTBEAT_MS)
    await settle()
    tracker.addEvent({ live: 1 })
    await clock.advance(150)
    await eventually(async () => expect(await e2e.rows(sql`select 1 from replay_chunks where session_id = ${sessionId}`)).toHaveLength(2))
  })
})

describe('the monthly limit', () => {
  test('429 or monthlyLimitReached: the tracker stops sending, quietly', async () => {
    const limited = await startE2eCore({ monthlyLimit: 3 })
    try {
      const b = openBrowser(limited.core.key, { ingestionUrl: limited.base, enableAutomaticTracking: false })
      browsers.push(b)
      const sessionId = b.tracker.getSessionId()
      for (let i = 0; i < 5; i++) {
        b.tracker.customEvent(`e${i}`)
        await b.clock.advance(EVENT_FLUSH_MS)
        await settle(10)
      }
      await eventually(async () => expect(b.tracker.getConnectionStatus().stopped).toBe('monthly_limit'))
      const posts = b.requests.filter((r) => r.method === 'POST').length
      b.tracker.customEvent('after the stop')
      b.tracker.start()
      await b.clock.advance(60_000)
      b.win.dispatchEvent(new b.win.Event('pagehide'))
      await settle(10)
      expect(b.requests.filter((r) => r.method === 'POST').length).toBe(posts)
      const stored = await limited.rows<{ n: number }>(sql`select count(*)::int as n from events where session_id = ${sessionId}`)
      expect(stored[0].n).toBeLessThanOrEqual(3)
      expect(b.tracker.viewLogs().filter((e) => e.level === 'error' || e.level === 'warn')).toEqual([])
    } finally {
      await limited.close()
    }
  })
})
