import { afterEach, describe, expect, test } from 'bun:test'
import { SESSION_IDLE_MS } from '@sightline/tracker/identity'
import { HELD_MAX } from '@sightline/tracker/messages'
import { REPLAY_FLUSH_MS } from '@sightline/tracker/queue'
import { settle } from './helpers/clock'
import { closeAll, pageHide, replayEvents, tracked, type Tracked } from './helpers/tracker'
import { CUSTOM, FULL_SNAPSHOT, INCREMENTAL, META, MOUSE_INTERACTION, MUTATION, type RecordedEvent } from './helpers/rrweb'

afterEach(closeAll)

/**
 * A replay player starts from a full snapshot and cannot apply what comes before it: each session of
 * a window begins with meta and full snapshot, and what happens before they are taken waits for them.
 */

/** The replay events of one session, chunk by chunk in `seq` order. */
const sessionReplay = (service: Tracked['service'], sessionId: string): RecordedEvent[] =>
  service
    .to('/events')
    .filter((r) => r.body.sessionId === sessionId)
    .sort((a, b) => a.body.seq - b.body.seq)
    .flatMap((r) => r.body.events)

const click = (win: Tracked['win'], target: Element) => target.dispatchEvent(new win.MouseEvent('click', { bubbles: true, clientX: 5, clientY: 5 }))

describe('the replay of a window begins with its full snapshot', () => {
  test("an event added before the recorder's first full snapshot goes right after it, stamped no earlier; custom events are no replay events and go at once", async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    // The recorder is a module start() loads: these come before it has taken anything.
    tracker.addEvent({ step: 'cart' })
    const later = { type: CUSTOM, timestamp: Date.now() + 60_000, data: { tag: 'given', payload: 1 } }
    tracker.addEvent(later)
    tracker.customEvent('checkout')
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const events = replayEvents(service) as RecordedEvent[]
    expect(events.map((e) => e.type)).toEqual([META, FULL_SNAPSHOT, CUSTOM, CUSTOM])
    expect(events[2].data).toEqual({ tag: 'custom', payload: { step: 'cart' } })
    // Stamped before the snapshot, it would be played before it (players order by time): it takes the snapshot's time.
    expect(events[2].timestamp).toBe(events[1].timestamp)
    expect(events[3]).toEqual(later)
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['checkout'])
    expect(service.to('/events')[0].body.seq).toBe(0)
  })

  test("after 30 idle minutes, the new session's replay begins with its full snapshot, then the click that began it; what the click changed is in the snapshot", async () => {
    const { tracker, service, clock, win } = tracked(
      { enableAutomaticTracking: false, redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['#cart'] } },
      { html: '<button>Add to cart</button><p id="cart">empty</p>' },
    )
    tracker.start()
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const first = tracker.getSessionId()
    const button = win.document.querySelector('button')!
    button.addEventListener('click', () => (win.document.getElementById('cart')!.textContent = 'one pair of wool socks'))
    await clock.advance(SESSION_IDLE_MS)
    click(win, button)
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const second = tracker.getSessionId()
    expect(second).not.toBe(first)
    const events = sessionReplay(service, second)
    expect(events.slice(0, 2).map((e) => e.type)).toEqual([META, FULL_SNAPSHOT])
    const clicks = events.filter((e) => e.type === INCREMENTAL && e.data.source === MOUSE_INTERACTION)
    expect(clicks.length).toBeGreaterThan(0)
    expect(clicks.every((e) => e.timestamp >= events[1].timestamp)).toBe(true)
    // The page's change before the snapshot is in it, not a mutation the player could not apply.
    expect(JSON.stringify(events[1])).toContain('one pair of wool socks')
    expect(JSON.stringify(events.filter((e) => e.type === INCREMENTAL && e.data.source === MUTATION))).not.toContain('one pair of wool socks')
  })

  test('a page stopped or hidden before the snapshot loses nothing it added: what waits goes as it is', async () => {
    const stopped = tracked({ enableAutomaticTracking: false })
    stopped.tracker.start()
    stopped.tracker.addEvent({ step: 'stopped' })
    stopped.tracker.stop()
    await settle()
    expect(replayEvents(stopped.service).map((e) => e.data.payload)).toEqual([{ step: 'stopped' }])
    // Stopped, nothing waits: an event goes as before.
    stopped.tracker.addEvent({ step: 'after stop' })
    await settle()
    expect(replayEvents(stopped.service).map((e) => e.data.payload)).toEqual([{ step: 'stopped' }, { step: 'after stop' }])

    const hidden = tracked({ enableAutomaticTracking: false })
    hidden.tracker.start()
    hidden.tracker.addEvent({ step: 'hidden' })
    pageHide(hidden.win)
    await hidden.service.beaconsRead()
    expect(replayEvents(hidden.service).map((e) => e.data.payload)).toEqual([{ step: 'hidden' }])
  })

  test("logout before the snapshot: what the previous user added stays in the previous user's session; the new session begins with its snapshot", async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    const before = tracker.getUserInfo()
    tracker.addEvent({ user: 'previous' })
    tracker.logout()
    tracker.addEvent({ user: 'next' })
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const after = tracker.getUserInfo()
    expect(after.sessionId).not.toBe(before.sessionId)
    expect(service.to('/events').filter((r) => r.body.sessionId === before.sessionId).map((r) => [r.body.endUserId, r.body.events.map((e: RecordedEvent) => e.data.payload)])).toEqual([[before.endUserId, [{ user: 'previous' }]]])
    const events = sessionReplay(service, after.sessionId)
    expect(events.map((e) => e.type)).toEqual([META, FULL_SNAPSHOT, CUSTOM])
    expect(events[2].data.payload).toEqual({ user: 'next' })
  })

  test(`at most ${HELD_MAX} events wait for the snapshot; more are dropped`, async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    for (let i = 0; i < HELD_MAX + 5; i++) tracker.addEvent({ i })
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const events = replayEvents(service) as RecordedEvent[]
    expect(events.slice(0, 2).map((e) => e.type)).toEqual([META, FULL_SNAPSHOT])
    expect(events.slice(2).map((e) => e.data.payload.i)).toEqual(Array.from({ length: HELD_MAX }, (_, i) => i))
  })
})
