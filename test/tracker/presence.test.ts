import { afterEach, describe, expect, test } from 'bun:test'
import { HEARTBEAT_MS } from '@sightline/tracker/queue'
import { settle } from './helpers/clock'
import { closeAll, pageHide, tracked } from './helpers/tracker'

afterEach(closeAll)

/**
 * Presence is a module `start()` imports, as it does the recorder: these are the moments before it
 * is there. (test/tracker/build.test.ts runs the built package with its modules arriving out of order.)
 */
describe('presence, before its module has loaded', () => {
  test('a page left right after start: what is queued goes by beacon, and no session-end, as no heartbeat went; the first beat goes once it loads', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    tracker.customEvent('right away')
    pageHide(win)
    await service.beaconsRead()
    expect(service.sent.map((r) => [r.via, r.path])).toEqual([['beacon', '/api/ingestion/customEvent/batch']])
    expect(service.to('/customEvent/batch')[0].body.events.map((e: { eventName: string }) => e.eventName)).toEqual(['right away'])
    // Kept by the back/forward cache, the page goes on: presence begins when its module is there.
    await settle()
    expect(service.to('/heartbeat')).toHaveLength(1)
    expect(service.to('/session-end')).toEqual([])
    await clock.advance(HEARTBEAT_MS)
    expect(service.to('/heartbeat')).toHaveLength(2)
  })

  test('stopped before it loads, it never starts: no heartbeat, no timer, no session-end', async () => {
    const { tracker, service, win, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    tracker.stop()
    await settle()
    await clock.advance(HEARTBEAT_MS)
    pageHide(win)
    await service.beaconsRead()
    expect(service.to('/heartbeat')).toEqual([])
    expect(service.to('/session-end')).toEqual([])
    expect(clock.pending()).toEqual([])
  })

  test('restarted before it loads: one presence, beating every 30 s', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    tracker.stop()
    tracker.start()
    await settle()
    expect(service.to('/heartbeat')).toHaveLength(1)
    await clock.advance(HEARTBEAT_MS)
    expect(service.to('/heartbeat')).toHaveLength(2)
    expect(clock.pending().filter((ms) => ms === HEARTBEAT_MS)).toHaveLength(1)
  })
})
