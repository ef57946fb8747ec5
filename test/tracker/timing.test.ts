import { afterEach, describe, expect, test } from 'bun:test'
import { EVENT_BATCH_MAX, EVENT_FLUSH_MS, HEARTBEAT_MS, LIVE_REPLAY_FLUSH_MS, REPLAY_FLUSH_MS, TELEMETRY_BATCH_MAX, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { SLOW_REQUEST_MS } from '@sightline/tracker/auto/network'
import { RAGE_CLICKS, RAGE_WINDOW_MS } from '@sightline/tracker/auto/clicks'
import { SESSION_IDLE_MS, SESSION_MAX_MS } from '@sightline/tracker/identity'
import { fakeClock, settle } from './helpers/clock'
import { FULL_SNAPSHOT } from './helpers/rrweb'
import { KEY, closeAll, pageHide, replayEvents, tracked, type Tracked } from './helpers/tracker'

afterEach(closeAll)

/** Every timing constant of the tracker, on an injected clock: nothing here waits for real time. */

describe('custom events: 100 ms or 50 events', () => {
  test(`flushed ${EVENT_FLUSH_MS} ms after the first event`, async () => {
    const { tracker, service, clock } = tracked()
    expect(EVENT_FLUSH_MS).toBe(100)
    tracker.customEvent('a')
    await clock.advance(EVENT_FLUSH_MS - 1)
    expect(service.sent).toEqual([])
    await clock.advance(1)
    expect(service.to('/customEvent/batch')).toHaveLength(1)
  })

  test(`at once at ${EVENT_BATCH_MAX} events`, async () => {
    const { tracker, service } = tracked()
    expect(EVENT_BATCH_MAX).toBe(50)
    for (let i = 0; i < EVENT_BATCH_MAX + 1; i++) tracker.customEvent(`e${i}`)
    await settle()
    expect(service.to('/customEvent/batch').map((r) => r.body.events.length)).toEqual([EVENT_BATCH_MAX])
  })
})

describe('replay: about every 3 s, every 150 ms while watched live', () => {
  test(`the first chunk (meta and full snapshot) goes ${REPLAY_FLUSH_MS} ms after recording starts`, async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    await clock.advance(REPLAY_FLUSH_MS - 1)
    expect(service.to('/events')).toEqual([])
    await clock.advance(1)
    const events = replayEvents(service)
    expect(events.map((e) => e.type).slice(0, 2)).toEqual([4, FULL_SNAPSHOT])
  })

  test(`liveViewer from the heartbeat switches to ${LIVE_REPLAY_FLUSH_MS} ms, and back`, async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    let live = true
    service.reply((request) => ({ status: 200, body: { success: true, liveViewer: request.path.endsWith('/heartbeat') ? live : undefined } }))
    tracker.start()
    await settle()
    // The heartbeat at start answered liveViewer: the full snapshot goes 150 ms after it was taken.
    await clock.advance(LIVE_REPLAY_FLUSH_MS)
    expect(service.to('/events')).toHaveLength(1)
    tracker.addEvent({ n: 1 })
    await clock.advance(LIVE_REPLAY_FLUSH_MS - 1)
    expect(service.to('/events')).toHaveLength(1)
    await clock.advance(1)
    expect(service.to('/events')).toHaveLength(2)
    live = false
    await clock.advance(HEARTBEAT_MS)
    tracker.addEvent({ n: 2 })
    await clock.advance(LIVE_REPLAY_FLUSH_MS)
    expect(service.to('/events')).toHaveLength(2)
    await clock.advance(REPLAY_FLUSH_MS - LIVE_REPLAY_FLUSH_MS)
    expect(service.to('/events')).toHaveLength(3)
  })

  test('chunks number themselves per tab: seq 0, 1, 2, ...', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    for (let i = 0; i < 3; i++) {
      tracker.addEvent({ i })
      await clock.advance(REPLAY_FLUSH_MS)
    }
    expect(service.to('/events').map((r) => r.body.seq)).toEqual([0, 1, 2])
  })
})

describe('heartbeat: about every 30 s', () => {
  test(`at start and every ${HEARTBEAT_MS / 1000} s, the key in a text/plain body`, async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    expect(service.to('/heartbeat')).toHaveLength(1)
    await clock.advance(HEARTBEAT_MS - 1)
    expect(service.to('/heartbeat')).toHaveLength(1)
    await clock.advance(1)
    const beats = service.to('/heartbeat')
    expect(beats).toHaveLength(2)
    const info = tracker.getUserInfo()
    expect(beats[1].body).toEqual({ sessionId: info.sessionId, endUserId: info.endUserId, windowId: info.windowId, url: 'http://shop.test/', apiKey: KEY })
    expect(beats[1].headers['content-type']).toBe('text/plain;charset=UTF-8')
    expect(beats[1].headers.authorization).toBeUndefined()
  })

  test("a Retry-After holds presence as it holds every send: no beat, and no session-end, while it lasts; the next beat after it goes", async () => {
    const { tracker, service, clock, win } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    // Asked for 40 s by an answer to another send.
    service.reply((request) => (request.path.endsWith('/heartbeat') ? { status: 200, body: { success: true } } : { status: 503, headers: { 'retry-after': '40' } }))
    tracker.customEvent('held')
    await clock.advance(EVENT_FLUSH_MS)
    await clock.advance(HEARTBEAT_MS - EVENT_FLUSH_MS)
    expect(service.to('/heartbeat')).toHaveLength(1)
    pageHide(win)
    await settle()
    expect(service.to('/session-end')).toHaveLength(0)
    // The hold over (at 40 s), the next beat goes.
    await clock.advance(HEARTBEAT_MS)
    expect(service.to('/heartbeat')).toHaveLength(2)
  })

  test("a heartbeat answered with Retry-After holds every send: an event meanwhile waits until then", async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    service.reply((request) => (request.path.endsWith('/heartbeat') ? { status: 503, headers: { 'retry-after': '20' } } : { status: 200, body: { success: true } }))
    tracker.start()
    await settle()
    tracker.customEvent('waits')
    await clock.advance(20_000 - 1)
    expect(service.to('/customEvent/batch')).toHaveLength(0)
    await clock.advance(1)
    expect(service.to('/customEvent/batch')).toHaveLength(1)
  })

  test('no beat once the session has ended for want of activity', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await clock.advance(SESSION_IDLE_MS + HEARTBEAT_MS)
    const beats = service.to('/heartbeat').length
    await clock.advance(HEARTBEAT_MS * 3)
    expect(service.to('/heartbeat').length).toBe(beats)
    expect(beats).toBe(Math.floor(SESSION_IDLE_MS / HEARTBEAT_MS) + (SESSION_IDLE_MS % HEARTBEAT_MS ? 1 : 0))
  })

  test('no session-end either, left hours after the session ended: the service would take it for activity in that session, and extend it to then', async () => {
    const { tracker, service, clock, win } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await clock.advance(3 * 60 * 60_000)
    pageHide(win)
    await service.beaconsRead()
    expect(service.to('/session-end')).toEqual([])
  })
})

describe('sessions: 30 minutes without activity, or 24 hours', () => {
  test('activity after 30 idle minutes starts a new session, which opens with a full snapshot', async () => {
    const { tracker, service, clock, win } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await clock.advance(REPLAY_FLUSH_MS)
    const first = tracker.getSessionId()
    await clock.advance(SESSION_IDLE_MS - REPLAY_FLUSH_MS - 1)
    tracker.customEvent('still here')
    expect(tracker.getSessionId()).toBe(first)
    await clock.advance(SESSION_IDLE_MS)
    win.document.body.dispatchEvent(new win.MouseEvent('click', { bubbles: true, clientX: 5, clientY: 5 }))
    await settle()
    await clock.advance(REPLAY_FLUSH_MS)
    const second = tracker.getSessionId()
    expect(second).not.toBe(first)
    const chunks = service.to('/events').filter((r) => r.body.sessionId === second)
    expect(chunks.flatMap((r) => r.body.events).some((e: { type: number }) => e.type === FULL_SNAPSHOT)).toBe(true)
  })

  test('and 24 hours after it began, however active', async () => {
    const { tracker, clock } = tracked({ enableAutomaticTracking: false })
    const first = tracker.getSessionId()
    for (let t = 0; t < SESSION_MAX_MS - 20 * 60_000; t += 20 * 60_000) {
      await clock.advance(20 * 60_000)
      tracker.customEvent('active')
    }
    expect(tracker.getSessionId()).toBe(first)
    await clock.advance(20 * 60_000)
    tracker.customEvent('active')
    expect(tracker.getSessionId()).not.toBe(first)
  })
})

describe('the session changing while the page stays open', () => {
  /** Every item sent, with the session and end user of the request that carried it, and its time. */
  const items = (service: Tracked['service']) =>
    service.sent.flatMap((r) =>
      ((r.body.events ?? r.body.logs ?? r.body.errors ?? []) as { timestamp?: number; timestampMs?: number }[]).map((item) => ({
        path: r.path,
        sessionId: r.body.sessionId,
        endUserId: r.body.endUserId,
        at: item.timestamp ?? item.timestampMs!,
        type: (item as { type?: number }).type,
      })),
    )

  test('at 24 hours, however active: what happened before goes in the old session, what after in the new, whose replay has its own full snapshot', async () => {
    const clock = fakeClock()
    // A session that began 23 h 50 min ago, active a moment ago.
    const session = { id: 'a-day-old', start: clock.now() - SESSION_MAX_MS + 10 * 60_000, last: clock.now() - 1000 }
    const { tracker, service, win } = tracked({ automaticTrackingOptions: { pageViews: false } }, { clock, storage: { localStorage: { sl_session: JSON.stringify(session) } } })
    tracker.start()
    await settle()
    const first = tracker.getSessionId()
    expect(first).toBe(session.id)
    const click = () => win.document.body.dispatchEvent(new win.MouseEvent('click', { bubbles: true, clientX: 5, clientY: 5 }))
    for (let t = 0; t < 10 * 60_000; t += 2 * 60_000) {
      click()
      win.console.warn('working')
      await clock.advance(2 * 60_000)
    }
    click()
    win.console.warn('still working')
    await clock.advance(REPLAY_FLUSH_MS)
    const second = tracker.getSessionId()
    expect(second).not.toBe(first)
    // Events and logs by the tracker's clock; the recorder stamps replay events with the page's own.
    const sent = items(service).filter((item) => !item.path.endsWith('/events'))
    const switched = Math.min(...sent.filter((item) => item.sessionId === second).map((item) => item.at))
    expect(sent.filter((item) => item.sessionId === first).every((item) => item.at < switched)).toBe(true)
    expect(sent.filter((item) => item.sessionId === second).map((item) => item.path)).toEqual(['/api/ingestion/customEvent/batch', '/api/ingestion/logs'])
    // The replay: the old session's chunks first, then the new one's, its meta and full snapshot first, then the click that began it.
    const chunks = service.to('/events').map((r) => r.body.sessionId)
    expect(chunks.indexOf(second)).toBe(chunks.lastIndexOf(first) + 1)
    expect(service.to('/events').filter((r) => r.body.sessionId === second).flatMap((r) => r.body.events.map((e: { type: number }) => e.type))).toEqual([4, 2, 3])
  })

  test('logout while a flush is on its way: what it carries stays the old user\'s, retried as it was; what comes after is the new one\'s, in its own batches', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.start()
    await settle()
    await tracker.identifyUser({ userProperties: { email: 'a@example.com' } })
    const before = tracker.getUserInfo()
    let failing = true
    service.reply((request) => (failing && request.path.endsWith('/customEvent/batch') ? { status: 503 } : { status: 200, body: { success: true } }))
    tracker.customEvent('before')
    tracker.captureError(new Error('before'))
    await clock.advance(EVENT_FLUSH_MS)
    tracker.logout()
    const after = tracker.getUserInfo()
    failing = false
    tracker.customEvent('after')
    tracker.captureError(new Error('after'))
    await clock.advance(REPLAY_FLUSH_MS)
    const owners = (path: string) => service.to(path).map((r) => [r.body.sessionId, r.body.endUserId, (r.body.events ?? r.body.errors).map((e: { eventName?: string; message?: string }) => e.eventName ?? e.message)])
    expect(owners('/customEvent/batch')).toEqual([
      [before.sessionId, before.endUserId, ['before']],
      [after.sessionId, after.endUserId, ['after']],
      [before.sessionId, before.endUserId, ['before']],
    ])
    expect(owners('/errors')).toEqual([
      [before.sessionId, before.endUserId, ['before']],
      [after.sessionId, after.endUserId, ['after']],
    ])
    expect(service.to('/events').every((r) => (r.body.sessionId === before.sessionId) === (r.body.endUserId === before.endUserId))).toBe(true)
  })
})

describe('telemetry: 1 s or 50 items', () => {
  test(`error reports, logs, network errors and spans go ${TELEMETRY_FLUSH_MS} ms after the first`, async () => {
    const { tracker, service, clock, win } = tracked({ automaticTrackingOptions: { clicks: false, pageViews: false } })
    tracker.start()
    await settle()
    tracker.captureError(new Error('x'))
    win.console.error('broken')
    await clock.advance(TELEMETRY_FLUSH_MS - 1)
    expect(service.to('/errors')).toEqual([])
    expect(service.to('/logs')).toEqual([])
    await clock.advance(1)
    expect(service.to('/errors')).toHaveLength(1)
    expect(service.to('/logs')).toHaveLength(1)
  })

  test(`at once at ${TELEMETRY_BATCH_MAX}`, async () => {
    // Logs: error reports come at most ERRORS_PER_WINDOW a minute.
    const { tracker, service, win } = tracked({ automaticTrackingOptions: { pageViews: false } })
    win.console.warn = () => {}
    tracker.start()
    await settle()
    for (let i = 0; i < TELEMETRY_BATCH_MAX; i++) win.console.warn(`w${i}`)
    await settle()
    expect(service.to('/logs').map((r) => r.body.logs.length)).toEqual([TELEMETRY_BATCH_MAX])
  })
})

describe('automatic tracking timings', () => {
  test(`${RAGE_CLICKS} clicks within ${RAGE_WINDOW_MS} ms are a rage click; slower ones are not`, async () => {
    const { tracker, service, clock, win } = tracked({ automaticTrackingOptions: { pageViews: false, clicks: false } })
    win.document.body.innerHTML = '<button id="pay">Pay</button>'
    tracker.start()
    await settle()
    // A person's pointer (happy-dom's events have no isTrusted: what a browser's input would say; a click's count in detail).
    const click = () => win.document.getElementById('pay')!.dispatchEvent(Object.defineProperty(new win.MouseEvent('click', { bubbles: true, clientX: 10, clientY: 10, detail: 1 }), 'isTrusted', { value: true }))
    for (let i = 0; i < RAGE_CLICKS; i++) {
      click()
      await clock.advance(RAGE_WINDOW_MS / RAGE_CLICKS + 1)
    }
    await clock.advance(RAGE_WINDOW_MS)
    // Just slower: never three within the window.
    for (let i = 0; i < RAGE_CLICKS + 2; i++) {
      click()
      await clock.advance(RAGE_WINDOW_MS / (RAGE_CLICKS - 1) + 1)
    }
    const rage = service.to('/customEvent/batch').flatMap((r) => r.body.events).filter((e: { eventName: string }) => e.eventName === '$rageclick')
    expect(rage).toHaveLength(1)
    expect(rage[0].eventProperties).toMatchObject({ tag: 'button', id: 'pay', clicks: RAGE_CLICKS })
  })

  test(`a request slower than ${SLOW_REQUEST_MS} ms is reported even when it succeeds`, async () => {
    const { tracker, service, clock, win } = tracked({ automaticTrackingOptions: { pageViews: false } })
    let finish!: () => void
    win.fetch = ((url: string) => new Promise((resolve) => (finish = () => resolve(new Response('ok', { status: 200 }))))) as typeof fetch
    tracker.start()
    await settle()
    const quick = win.fetch('http://api.test/quick')
    finish()
    await quick
    const slow = win.fetch('http://api.test/slow')
    await clock.advance(SLOW_REQUEST_MS + 1)
    finish()
    await slow
    await clock.advance(TELEMETRY_FLUSH_MS)
    expect(service.to('/network').flatMap((r) => r.body.errors).map((e: { url: string; errorType: string }) => [e.url, e.errorType])).toEqual([['http://api.test/slow', 'slow']])
  })
})
