import { afterEach, describe, expect, test } from 'bun:test'
import { OUTBOX_MAX_FAILURES } from '@sightline/tracker/delivery'
import type { Parcel } from '@sightline/tracker/storage'
import { fakeClock, settle, type FakeClock } from './helpers/clock'
import { keeping, keptParcels, storageOf } from './helpers/dom'
import { fakeService, type FakeService, type Reply, type Sent } from './helpers/service'
import { KEY, closeAll, tracked } from './helpers/tracker'

afterEach(closeAll)

const parcel = (name: string) => ({ id: `0190000${name}`, path: '/api/ingestion/customEvent/batch', body: { sessionId: 's', endUserId: 'u', events: [{ eventName: name, uuid: name }] } })
const names = (request: Sent): string[] => request.body?.events?.map((event: { eventName: string }) => event.eventName) ?? []
const OK: Reply = { status: 200, body: { success: true } }

/** A service that answers `bad` with `failure` (while `failing`) and takes everything else. */
function serviceFailing(failure: Reply) {
  const service = fakeService() as FakeService & { failing: boolean; tries: () => number }
  service.failing = true
  service.reply((request) => (service.failing && names(request).includes('bad') ? failure : OK))
  service.tries = () => service.sent.filter((request) => names(request).includes('bad')).length
  return service
}

/**
 * One page load over what the last one left in localStorage: it drains, then (`event`) sends an event
 * of its own, whose success drains again, as a page's traffic does. What it leaves, and what it says.
 */
async function pageLoad(localStorage: Record<string, string>, service: FakeService, clock: FakeClock, event = false) {
  const t = tracked({ enableAutomaticTracking: false }, { service, clock, storage: { localStorage } })
  await settle()
  if (event) t.tracker.customEvent('good')
  await clock.advance(5000)
  const status = t.tracker.getConnectionStatus()
  t.tracker.stop()
  await settle()
  const left = storageOf(t.win).localStorage
  await t.close()
  return { left, status }
}

describe('a kept parcel the service fails every time', () => {
  test(`answered 500 on every page load: tried ${OUTBOX_MAX_FAILURES} times in all, then dropped and counted (dropped.failed); the parcel behind it is stored on the first load`, async () => {
    const service = serviceFailing({ status: 500 })
    const clock = fakeClock()
    let storage = keeping(KEY, parcel('bad'), parcel('next'))
    for (let load = 1; load <= OUTBOX_MAX_FAILURES + 3; load++) {
      const { left, status } = await pageLoad(storage, service, clock)
      storage = left
      const kept = keptParcels<{ failed?: number }>(storage, KEY)
      expect(service.tries()).toBe(Math.min(load, OUTBOX_MAX_FAILURES))
      if (load < OUTBOX_MAX_FAILURES) expect([kept.map((p) => p.failed), status.dropped.failed]).toEqual([[load], undefined])
      else expect([kept, status.queued, status.dropped.failed]).toEqual([[], 0, load === OUTBOX_MAX_FAILURES ? 1 : undefined])
    }
    expect(service.sent.filter((request) => names(request).includes('next'))).toHaveLength(1)
  })

  test(`answered 502 by a gateway on every page load while the service takes the rest: counted once a load too, and dropped after ${OUTBOX_MAX_FAILURES}`, async () => {
    const service = serviceFailing({ status: 502 })
    const clock = fakeClock()
    let storage = keeping(KEY, parcel('bad'))
    for (let load = 1; load <= OUTBOX_MAX_FAILURES + 1; load++) {
      const { left, status } = await pageLoad(storage, service, clock, true)
      storage = left
      // Each load: the drain stops at it; the page's own event is taken, and the next drain finds it failing by itself.
      expect(service.tries()).toBe(Math.min(load, OUTBOX_MAX_FAILURES) * 2)
      expect(keptParcels<{ failed?: number }>(storage, KEY).map((p) => p.failed)).toEqual(load < OUTBOX_MAX_FAILURES ? [load] : [])
      expect(status.dropped.failed).toBe(load === OUTBOX_MAX_FAILURES ? 1 : undefined)
    }
  })

  test('failing on a few page loads and then taken: stored once, and sent no more', async () => {
    const service = serviceFailing({ status: 500 })
    const clock = fakeClock()
    let storage = keeping(KEY, parcel('bad'))
    for (let load = 1; load <= 3; load++) storage = (await pageLoad(storage, service, clock)).left
    expect(keptParcels<Parcel>(storage, KEY)).toEqual([{ ...parcel('bad'), failed: 3 }])
    service.failing = false
    for (let load = 4; load <= 6; load++) {
      const { left, status } = await pageLoad(storage, service, clock)
      storage = left
      expect([keptParcels(storage, KEY), status.dropped.failed]).toEqual([[], undefined])
    }
    // Three failures, then one success: the body sent is the one kept, as it was.
    const tried = service.sent.filter((request) => names(request).includes('bad'))
    expect(tried).toHaveLength(4)
    expect(tried.map((request) => request.body.events[0].uuid)).toEqual(['bad', 'bad', 'bad', 'bad'])
    expect(tried.every((request) => !('failed' in request.body))).toBe(true)
  })
})

describe('not the parcel\'s failure: never counted, never dropped', () => {
  for (const [what, failure] of [
    ['503 with Retry-After (overloaded)', { status: 503, headers: { 'retry-after': '1' } }],
    ['429 (quota)', { status: 429, body: { success: false } }],
    ['no answer from a service that is down', 'network-error'],
  ] as [string, Reply][]) {
    test(`${what}, on ${OUTBOX_MAX_FAILURES + 2} page loads: kept as it was`, async () => {
      const service = fakeService()
      // Down: the reachability probe fails too.
      service.reply((request) => (failure === 'network-error' || names(request).includes('bad') ? failure : OK))
      const clock = fakeClock()
      let storage = keeping(KEY, parcel('bad'))
      for (let load = 1; load <= OUTBOX_MAX_FAILURES + 2; load++) {
        const { left, status } = await pageLoad(storage, service, clock, true)
        storage = left
        expect(status.dropped.failed).toBeUndefined()
        expect(keptParcels(storage, KEY)[0]).toEqual(parcel('bad'))
      }
    })
  }
})
