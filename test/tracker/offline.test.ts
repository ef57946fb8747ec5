import { afterEach, describe, expect, test } from 'bun:test'
import { EVENT_FLUSH_MS, HEARTBEAT_MS } from '@sightline/tracker/queue'
import { OUTBOX_MAX_CHARS } from '@sightline/tracker/storage'
import { settle } from './helpers/clock'
import { keeping, keptParcels, storageOf } from './helpers/dom'
import { fakeService } from './helpers/service'
import { KEY, closeAll, pageHide, tracked, type Tracked } from './helpers/tracker'

afterEach(closeAll)

const setOnline = (t: Tracked, online: boolean) => {
  Object.defineProperty(t.win.navigator, 'onLine', { value: online, configurable: true })
  if (online) t.win.dispatchEvent(new t.win.Event('online'))
}

/** What the service got, once each: custom events by uuid, replay chunks by window and seq. */
function delivered(service: ReturnType<typeof fakeService>) {
  const events = service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { uuid: string; eventName: string }) => [e.uuid, e.eventName]))
  const chunks = service.to('/events').map((r) => `${r.body.windowId}#${r.body.seq}`)
  return { events, chunks }
}

describe('offline, then a reload, then online', () => {
  test('nothing is lost and nothing is sent twice', async () => {
    const service = fakeService()
    const first = tracked({ enableAutomaticTracking: false }, { service, offline: true })
    first.tracker.start()
    await settle()
    for (const name of ['a', 'b', 'c']) first.tracker.customEvent(name)
    await first.clock.advance(3000)
    first.tracker.addEvent({ step: 1 })
    first.tracker.customEvent('d')
    // Leaving while offline: the beacons would not get through either; everything is kept.
    pageHide(first.win)
    await settle()
    expect(service.sent).toEqual([])
    const storage = storageOf(first.win)
    await first.close()

    // The reload, still offline: what the last page kept stays kept, the new page adds to it.
    const second = tracked({ enableAutomaticTracking: false }, { service, storage, clock: first.clock, offline: true })
    second.tracker.customEvent('e')
    await second.clock.advance(3000)
    expect(service.sent).toEqual([])
    expect(second.tracker.getConnectionStatus()).toMatchObject({ online: false, queued: expect.any(Number) })
    const queued = second.tracker.getConnectionStatus().queued
    expect(queued).toBeGreaterThanOrEqual(4)

    // Back online: everything goes, once.
    setOnline(second, true)
    await settle()
    await second.clock.advance(3000)
    const { events, chunks } = delivered(service)
    expect(events.map(([, name]: string[]) => name).sort()).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(new Set(events.map(([uuid]: string[]) => uuid)).size).toBe(5)
    expect(chunks.length).toBeGreaterThanOrEqual(2)
    expect(new Set(chunks).size).toBe(chunks.length)
    expect(service.sent.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true)
    expect(second.tracker.getConnectionStatus().queued).toBe(0)
  })

  for (const [what, storage] of [
    ['a localStorage that refuses every write (full, or a quota of 0)', { localStorageFull: true }],
    ['cookies blocked (storage throws, Web Locks refuse)', { storageDenied: true }],
  ] as const) test(`${what}: what is produced offline is kept in memory and sent once online, none dropped`, async () => {
    const t = tracked({ enableAutomaticTracking: false }, { storage, offline: true })
    t.tracker.start()
    await settle()
    for (const name of ['a', 'b', 'c']) {
      t.tracker.customEvent(name)
      await t.clock.advance(1000)
    }
    await t.clock.advance(3000)
    expect(t.service.sent).toEqual([])
    const { queued, dropped } = t.tracker.getConnectionStatus()
    expect(queued).toBeGreaterThanOrEqual(4)
    expect(dropped.outbox).toBe(0)

    setOnline(t, true)
    await settle()
    const { events, chunks } = delivered(t.service)
    expect(events.map(([, name]: string[]) => name)).toEqual(['a', 'b', 'c'])
    expect(chunks).toHaveLength(1)
    expect(t.tracker.getConnectionStatus()).toMatchObject({ queued: 0, dropped: { outbox: 0 } })
  })

  test('offline for long, the outbox at its bound: the oldest go first, counted; back online the rest go oldest first, with their uuids', async () => {
    const t = tracked({ enableAutomaticTracking: false }, { offline: true })
    const pad = 'x'.repeat(OUTBOX_MAX_CHARS / 20)
    const uuids: string[] = []
    for (let i = 0; i < 30; i++) {
      t.tracker.customEvent('while offline', { i, pad })
      await t.clock.advance(EVENT_FLUSH_MS)
    }
    const kept = keptParcels<{ body: { events: { uuid: string; eventProperties: { i: number } }[] } }>(storageOf(t.win).localStorage, KEY)
    for (const parcel of kept) for (const event of parcel.body.events) uuids.push(event.uuid)
    const { queued, dropped } = t.tracker.getConnectionStatus()
    expect(queued).toBe(kept.length)
    expect(dropped.outbox).toBe(30 - kept.length)
    expect(dropped.outbox).toBeGreaterThan(0)
    expect(kept.map((parcel) => parcel.body.events[0].eventProperties.i)).toEqual(Array.from({ length: kept.length }, (_, n) => 30 - kept.length + n))

    setOnline(t, true)
    await settle()
    const sent = t.service.to('/customEvent/batch').flatMap((r) => r.body.events as { uuid: string; eventProperties: { i: number } }[])
    expect(sent.map((event) => event.uuid)).toEqual(uuids)
    expect(t.tracker.getConnectionStatus()).toMatchObject({ queued: 0, dropped: { outbox: 30 - kept.length } })
  })

  test('the next page load drains what an earlier page could not send (the server down meanwhile)', async () => {
    const service = fakeService()
    service.reply((request) => (request.path === '/health/simple' ? 'network-error' : { status: 503, headers: { 'retry-after': '1' } }))
    const first = tracked({ enableAutomaticTracking: false }, { service })
    first.tracker.customEvent('during outage')
    for (let i = 0; i < 6; i++) await first.clock.advance(60_000)
    expect(first.tracker.getConnectionStatus().queued).toBe(1)
    const attempts = service.sent.length
    expect(attempts).toBe(5)
    const storage = storageOf(first.win)
    await first.close()

    service.reply(() => ({ status: 200, body: { success: true } }))
    tracked({ enableAutomaticTracking: false }, { service, storage, clock: first.clock })
    await settle()
    const resent = service.sent.slice(attempts)
    expect(resent.map((r) => r.body.events[0].eventName)).toEqual(['during outage'])
    expect(resent[0].body.events[0].uuid).toBe(service.sent[0].body.events[0].uuid)
  })

  test('what a drain had to leave (the service down) goes at the next heartbeat answered, on a page that sends nothing else', async () => {
    const service = fakeService()
    service.reply((request) => (request.path.endsWith('/heartbeat') ? { status: 200, body: { success: true, liveViewer: false } } : 'network-error'))
    const storage = { localStorage: keeping(KEY, { id: 'kept', path: '/api/ingestion/customEvent/batch', body: { sessionId: 's', events: [{ eventName: 'kept' }] } }) }
    const t = tracked({ enableAutomaticTracking: false }, { service, storage })
    t.tracker.start()
    // The first chunk fails too, until it is kept.
    await t.clock.advance(HEARTBEAT_MS - 1)
    expect(t.tracker.getConnectionStatus().queued).toBe(2)
    expect(t.clock.pending()).toEqual([1])
    service.reply(() => ({ status: 200, body: { success: true } }))
    await t.clock.advance(1)
    expect(service.to('/customEvent/batch').map((r) => r.body.events[0].eventName)).toEqual(['kept'])
    expect(t.tracker.getConnectionStatus().queued).toBe(0)
  })

  test('429 stops all sending quietly: nothing queued is sent, nothing persisted, no more requests', async () => {
    const service = fakeService()
    const t = tracked({ automaticTrackingOptions: { pageViews: false } }, { service })
    t.tracker.start()
    await settle()
    service.reply(() => ({ status: 429, body: { success: false, error: { code: 'monthly_limit_reached' }, monthlyLimitReached: true } }))
    t.tracker.customEvent('over the limit')
    await t.clock.advance(100)
    const sent = service.sent.length
    t.tracker.customEvent('after')
    t.tracker.captureError(new Error('after'))
    await t.clock.advance(120_000)
    pageHide(t.win)
    await settle()
    expect(service.sent.length).toBe(sent)
    expect(t.tracker.getConnectionStatus()).toMatchObject({ stopped: 'monthly_limit', queued: 0 })
    expect(t.tracker.getConnectionStatus().recommendations).toEqual(['Monthly limit reached: raise the project limit'])
    expect(t.clock.pending()).toEqual([])
    t.tracker.start()
    await settle()
    expect(service.sent.length).toBe(sent)
  })
})
