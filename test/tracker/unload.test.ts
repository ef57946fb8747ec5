import { afterEach, describe, expect, test } from 'bun:test'
import { HEARTBEAT_MS } from '@sightline/tracker/queue'
import { BEACON_MAX_BYTES } from '@sightline/tracker/transport'
import { settle } from './helpers/clock'
import { keptParcels, storageOf } from './helpers/dom'
import { fakeService } from './helpers/service'
import { KEY, closeAll, pageHide, tracked } from './helpers/tracker'

afterEach(closeAll)

describe('leaving the page', () => {
  test('pagehide: everything queued goes by beacon, the key in a text/plain body; then session-end', async () => {
    const { tracker, service, win, clock } = tracked({ release: 'r1', automaticTrackingOptions: { pageViews: false } })
    tracker.start()
    await settle()
    await clock.advance(3000)
    const fetched = service.sent.length
    tracker.customEvent('last click')
    tracker.captureError(new Error('on the way out'))
    tracker.addEvent({ last: true })
    pageHide(win)
    await service.beaconsRead()
    const beacons = service.sent.slice(fetched)
    expect(beacons.map((r) => [r.via, r.path])).toEqual([
      ['beacon', '/api/ingestion/customEvent/batch'],
      ['beacon', '/api/ingestion/errors'],
      ['beacon', '/api/ingestion/events'],
      ['beacon', '/api/ingestion/session-end'],
    ])
    for (const beacon of beacons) {
      expect(beacon.headers['content-type']).toBe('text/plain;charset=UTF-8')
      expect(beacon.headers.authorization).toBeUndefined()
      expect(beacon.body.apiKey).toBe(KEY)
    }
    const info = tracker.getUserInfo()
    expect(beacons[3].body).toEqual({ sessionId: info.sessionId, endUserId: info.endUserId, windowId: info.windowId, apiKey: KEY })
    expect(beacons[0].body.events[0]).toMatchObject({ eventName: 'last click', uuid: expect.any(String) })
  })

  test("what the page records in its own pagehide listener, after the tracker's, goes by beacon at once (no timer runs on a page that is gone); back from the cache, batching as before", async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    win.addEventListener('pagehide', () => tracker.customEvent('page left'))
    pageHide(win)
    await service.beaconsRead()
    const left = service.to('/customEvent/batch')
    expect(left.map((r) => [r.via, r.body.events.map((e: { eventName: string }) => e.eventName)])).toEqual([['beacon', ['page left']]])
    expect(left[0].body.apiKey).toBe(KEY)
    const restored = new win.Event('pageshow') as Event & { persisted?: boolean }
    restored.persisted = true
    win.dispatchEvent(restored)
    tracker.customEvent('back')
    await settle()
    expect(service.to('/customEvent/batch')).toHaveLength(1)
    await clock.advance(100)
    expect(service.to('/customEvent/batch').map((r) => r.via)).toEqual(['beacon', 'fetch'])
  })

  test('a page that stops the tracker in its pagehide listener and starts it again when shown from the cache: batching by fetch as before, not a beacon per event', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    win.addEventListener('pagehide', () => tracker.stop())
    win.addEventListener('pageshow', (event) => (event as PageTransitionEvent).persisted && tracker.start())
    pageHide(win)
    await service.beaconsRead()
    const restored = new win.Event('pageshow') as Event & { persisted?: boolean }
    restored.persisted = true
    win.dispatchEvent(restored)
    await settle()
    const before = service.to('/customEvent/batch').length
    tracker.customEvent('back')
    tracker.customEvent('again')
    await clock.advance(100)
    await service.beaconsRead()
    const after = service.to('/customEvent/batch').slice(before)
    expect(after.map((r) => [r.via, r.body.events.map((e: { eventName: string }) => e.eventName)])).toEqual([['fetch', ['back', 'again']]])
  })

  test("a page that stops the tracker in its own pagehide listener, after the tracker's and presence's: one session-end (stop() sends one too, unless the page hide did)", async () => {
    const { tracker, service, win } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    win.addEventListener('pagehide', () => tracker.stop())
    pageHide(win)
    await service.beaconsRead()
    expect(service.to('/session-end')).toHaveLength(1)
  })

  test('sending stopped by the service (the monthly limit) stops the tracker, presence with it: no session-end then, nor at page hide', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    service.reply(() => ({ status: 429, body: { success: false, monthlyLimitReached: true } }))
    tracker.customEvent('over the limit')
    await clock.advance(100)
    await settle()
    expect(tracker.getConnectionStatus().stopped).toBe('monthly_limit')
    pageHide(win)
    await service.beaconsRead()
    expect(service.to('/session-end')).toEqual([])
  })

  test("left, in Chromium's order (pagehide, visibilitychange, unload): what the page records in its own visibilitychange and unload listeners goes by beacon at once too", async () => {
    const { tracker, service, win } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    win.document.addEventListener('visibilitychange', () => tracker.customEvent('hidden'))
    win.addEventListener('unload', () => tracker.customEvent('unloaded'))
    pageHide(win)
    Object.defineProperty(win.document, 'visibilityState', { value: 'hidden', configurable: true })
    win.document.dispatchEvent(new win.Event('visibilitychange'))
    win.dispatchEvent(new win.Event('unload'))
    await service.beaconsRead()
    // No timer runs on a page that is gone: a batch waiting for one would be lost.
    const left = service.to('/customEvent/batch')
    expect(left.map((r) => [r.via, r.body.events.map((e: { eventName: string }) => e.eventName)])).toEqual([
      ['beacon', ['hidden']],
      ['beacon', ['unloaded']],
    ])
  })

  test('back from the back/forward cache: presence says so at once, and beats every 30 s from then; the replay goes on from a full snapshot', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await clock.advance(10_000)
    pageHide(win)
    await service.beaconsRead()
    expect(service.to('/session-end')).toHaveLength(1)
    const chunks = service.to('/events').length
    const restored = new win.Event('pageshow') as Event & { persisted?: boolean }
    restored.persisted = true
    win.dispatchEvent(restored)
    await settle()
    expect(service.to('/heartbeat')).toHaveLength(2)
    await clock.advance(HEARTBEAT_MS)
    expect(service.to('/heartbeat')).toHaveLength(3)
    // The tab may have shown other pages meanwhile, in the same window of the replay.
    const after = service.to('/events').slice(chunks)
    expect(after.flatMap((r) => r.body.events.map((e: { type: number }) => e.type)).slice(0, 2)).toEqual([4, 2])
  })

  test('hidden (a tab switch, or a mobile browser about to discard): queued data goes by beacon, no session-end', async () => {
    const { tracker, service, win } = tracked()
    tracker.start()
    await settle()
    tracker.customEvent('before hide')
    Object.defineProperty(win.document, 'visibilityState', { value: 'hidden', configurable: true })
    win.document.dispatchEvent(new win.Event('visibilitychange'))
    await service.beaconsRead()
    expect(service.sent.filter((r) => r.via === 'beacon').map((r) => r.path)).toEqual(['/api/ingestion/customEvent/batch', '/api/ingestion/events'])
  })

  test('a sendBeacon the page or an extension replaced with one that throws: nothing is thrown into the page, what it would carry is kept for the next page', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await clock.advance(3000)
    win.navigator.sendBeacon = () => {
      throw new TypeError('beacons are disabled')
    }
    tracker.customEvent('kept')
    expect(() => pageHide(win)).not.toThrow()
    await settle()
    const kept = keptParcels<{ path: string; body: { events: { eventName?: string }[] } }>(storageOf(win).localStorage, KEY)
    expect(kept.map((parcel) => parcel.path)).toEqual(['/api/ingestion/customEvent/batch'])
    expect(kept[0].body.events.map((event) => event.eventName)).toEqual(['kept'])
    expect(service.to('/session-end')).toEqual([])
  })

  test('a sendBeacon the page wrapped in one that answers nothing (undefined): each send goes by fetch too, since a refusal cannot be told (the service stores it once)', async () => {
    const { tracker, service, win } = tracked({ enableAutomaticTracking: false })
    const original = win.navigator.sendBeacon
    win.navigator.sendBeacon = function (this: Navigator, ...args: Parameters<Navigator['sendBeacon']>) {
      original.apply(this, args)
    } as Navigator['sendBeacon']
    tracker.start()
    await settle()
    tracker.customEvent('once')
    pageHide(win)
    await service.beaconsRead()
    await settle()
    expect(service.to('/customEvent/batch').map((r) => r.via).sort()).toEqual(['beacon', 'keepalive'])
  })

  test('without sendBeacon: fetch with keepalive, key in the body', async () => {
    const { tracker, service, win } = tracked()
    ;(win.navigator as { sendBeacon?: unknown }).sendBeacon = undefined
    tracker.start()
    await settle()
    tracker.customEvent('x')
    pageHide(win)
    await settle()
    const kept = service.sent.filter((r) => r.via === 'keepalive')
    expect(kept.map((r) => r.path)).toEqual(['/api/ingestion/customEvent/batch', '/api/ingestion/events', '/api/ingestion/session-end'])
    expect(kept.every((r) => r.body.apiKey === KEY && r.headers['content-type'] === 'text/plain;charset=UTF-8')).toBe(true)
  })

  test("without sendBeacon: never past the browser's quota for keepalive bodies in flight (64 KB in all); what would go past it is kept for the next page", async () => {
    // A browser's keepalive fetch: one that would take the bodies in flight past 64 KB is refused,
    // later, in a task the unloading page never runs; the others wait for answers that come after it is gone.
    const service = fakeService()
    const { fetch } = service
    let inFlight = 0
    service.fetch = async (input, init = {}) => {
      if (!init.keepalive) return fetch(input, init)
      const size = new Blob([init.body as string]).size
      if (inFlight + size > 64 * 1024) throw new TypeError('Failed to fetch')
      inFlight += size
      void fetch(input, init)
      return new Promise<never>(() => {})
    }
    const { tracker, win } = tracked({ enableAutomaticTracking: false }, { service })
    ;(win.navigator as { sendBeacon?: unknown }).sendBeacon = undefined
    const text = 'x'.repeat(25_000)
    for (const step of ['cart', 'address', 'payment']) tracker.customEvent(step, { text })
    pageHide(win)
    await settle()
    const names = (bodies: { events: { eventName: string }[] }[]) => bodies.flatMap((body) => body.events.map((event) => event.eventName))
    expect(names(service.sent.filter((r) => r.via === 'keepalive').map((r) => r.body))).toEqual(['cart', 'address'])
    expect(names(keptParcels(storageOf(win).localStorage, KEY).map((parcel) => parcel.body))).toEqual(['payment'])
  })

  test('what a beacon cannot carry (a large full snapshot), and what was in flight, is kept for the next page, unchanged', async () => {
    const service = fakeService()
    let hold!: () => void
    const held = new Promise<void>((resolve) => (hold = resolve))
    service.reply(async (request) => {
      if (request.path.endsWith('/customEvent/batch') && request.via === 'fetch') await held
      return { status: 200, body: { success: true } }
    })
    const big = 'x'.repeat(BEACON_MAX_BYTES)
    const first = tracked({ enableAutomaticTracking: false }, { service, html: `<p>${big}</p>` })
    first.tracker.start()
    await settle()
    first.tracker.customEvent('in flight')
    await first.clock.advance(100)
    pageHide(first.win)
    await settle()
    await service.beaconsRead()
    // The chunk was halved for the beacon: its meta event went, the full snapshot alone is too large.
    expect(service.sent.map((r) => r.path).sort()).toEqual(['/api/ingestion/events', '/api/ingestion/heartbeat', '/api/ingestion/session-end'])
    expect(service.to('/events')[0].body.events.map((e: { type: number }) => e.type)).toEqual([4])
    const storage = storageOf(first.win)
    const kept = keptParcels(storage.localStorage, KEY)
    expect(kept.map((p: { path: string }) => p.path).sort()).toEqual(['/api/ingestion/customEvent/batch', '/api/ingestion/events'])

    // The next page load sends them by fetch, bodies as they were (same uuid, same seq).
    const next = tracked({ enableAutomaticTracking: false }, { service, storage, clock: first.clock })
    hold()
    await settle()
    const resent = service.sent.filter((r) => r.via === 'fetch')
    const chunk = resent.find((r) => r.path.endsWith('/events'))!
    expect(chunk.body).toEqual(kept.find((p) => p.path.endsWith('/events'))!.body)
    expect(chunk.text.length).toBeGreaterThan(BEACON_MAX_BYTES)
    const events = resent.filter((r) => r.path.endsWith('/customEvent/batch'))
    // The first send got through after all; its persisted copy went out again with the same uuid,
    // which the server stores once.
    expect(new Set(events.map((r) => r.body.events[0].uuid)).size).toBe(1)
    expect(next.tracker.getConnectionStatus().queued).toBe(0)
  })
})
