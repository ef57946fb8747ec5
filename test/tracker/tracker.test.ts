import { afterEach, describe, expect, test } from 'bun:test'
import { SDK_VERSION, ServiceTracker } from '@sightline/tracker'
import { RETRY_MAX_MS } from '@sightline/tracker/delivery'
import { STORAGE_REFUSED } from '@sightline/tracker/diagnostics'
import { SESSION_IDLE_MS } from '@sightline/tracker/identity'
import { CHUNK_MAX_BYTES, EVENT_FLUSH_MS, REPLAY_FLUSH_MS } from '@sightline/tracker/queue'
import { REQUEST_TIMEOUT_MS } from '@sightline/tracker/transport'
import trackerPackage from '../../tracker/package.json'
import { settle } from './helpers/clock'
import { storageOf } from './helpers/dom'
import { SERVICE_BASE } from './helpers/service'
import { KEY, closeAll, pageHide, replayEvents, tracked } from './helpers/tracker'

afterEach(closeAll)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Bytes of UTF-8. */
const utf8 = (text: string) => new TextEncoder().encode(text).length

describe('init', () => {
  test('one tracker per page: the same key returns the same instance; another key stops the first', async () => {
    const { tracker, win, service, clock } = tracked()
    expect(ServiceTracker.init(KEY, {}, { window: win, fetch: service.fetch, clock })).toBe(tracker)
    tracker.start()
    const other = ServiceTracker.init('sl_dev_other', { ingestionUrl: SERVICE_BASE }, { window: win, fetch: service.fetch, clock })
    expect(other).not.toBe(tracker)
    // The first one stopped: its heartbeat timer is gone (once the heartbeat in flight is answered).
    other.stop()
    await settle()
    expect(clock.pending()).toEqual([])
  })

  test('sends nothing until there is something to send; sdkVersion is the package version', async () => {
    const { service, clock } = tracked()
    await clock.advance(60_000)
    expect(service.sent).toEqual([])
    expect(SDK_VERSION).toBe(trackerPackage.version)
  })
})

describe('customEvent', () => {
  test('batched to /customEvent/batch with a uuid and timestamp, in the fielded shape', async () => {
    const { tracker, service, clock } = tracked()
    tracker.customEvent('signup', { plan: 'pro' })
    tracker.customEvent('checkout')
    await clock.advance(EVENT_FLUSH_MS)
    const [request] = service.to('/customEvent/batch')
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`)
    const info = tracker.getUserInfo()
    expect(request.body).toEqual({
      sessionId: info.sessionId,
      endUserId: info.endUserId,
      events: [
        { eventName: 'signup', eventProperties: { plan: 'pro' }, timestamp: clock.now() - EVENT_FLUSH_MS, uuid: expect.stringMatching(UUID) },
        { eventName: 'checkout', timestamp: clock.now() - EVENT_FLUSH_MS, uuid: expect.stringMatching(UUID) },
      ],
    })
    expect(request.body.events[0].uuid).not.toBe(request.body.events[1].uuid)
  })

  test('without a name: a warning in the log, nothing sent', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    tracker.customEvent('')
    tracker.customEvent(undefined as unknown as string)
    await clock.advance(1000)
    expect(service.sent).toEqual([])
    expect(tracker.viewLogs().map((entry) => entry.message)).toEqual(['customEvent needs an event name', 'customEvent needs an event name'])
  })
})

describe('properties that are not a JSON object', () => {
  test('a cycle or a BigInt is refused at the call, with a warning; nothing else is held up', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    tracker.customEvent('cyclic', cycle)
    tracker.customEvent('big', { n: 10n as unknown })
    tracker.groupIdentify('company', 'acme', cycle)
    const id = tracker.getUserInfo().endUserId
    expect(await tracker.identifyUser({ userProperties: cycle })).toBe(id)
    tracker.captureError(new Error('with a bad context'), cycle)
    tracker.customEvent('fine')
    await clock.advance(1000)
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['fine'])
    expect(service.to('/user')).toEqual([])
    expect(service.to('/groupidentify')).toEqual([])
    expect(service.to('/errors')[0].body.errors[0]).toMatchObject({ message: 'with a bad context' })
    expect(tracker.viewLogs()).toHaveLength(5)
  })

  test('properties go as they were at the call: an object the page changes before its batch goes (a later value, a cycle) changes nothing sent', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    const rejections: unknown[] = []
    const onRejection = (reason: unknown) => rejections.push(reason)
    process.on('unhandledRejection', onRejection)
    try {
      // One object reused for each step of a checkout, which later holds a cycle (a parent, a DOM node).
      const step: Record<string, unknown> = { step: 1 }
      tracker.customEvent('checkout', step)
      step.step = 2
      tracker.customEvent('checkout', step)
      const context: Record<string, unknown> = { cart: 3 }
      tracker.captureError(new Error('declined'), context)
      const group: Record<string, unknown> = { plan: 'pro' }
      tracker.groupIdentify('company', 'acme', group)
      const event = { type: 5, timestamp: 123, data: { tag: 'step', payload: { step: 1 } } }
      tracker.addEvent(event)
      step.self = step
      context.self = context
      group.self = group
      event.data.payload.step = 2
      await clock.advance(REPLAY_FLUSH_MS)
      await settle()
      expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventProperties: unknown }) => e.eventProperties))).toEqual([{ step: 1 }, { step: 2 }])
      expect(service.to('/errors').map((r) => r.body.errors[0].context)).toEqual([{ cart: 3 }])
      expect(service.to('/groupidentify').map((r) => r.body.groupProperties)).toEqual([{ plan: 'pro' }])
      expect(replayEvents(service).map((e) => e.data)).toEqual([{ tag: 'step', payload: { step: 1 } }])
      // Each went once: nothing failed, nothing was retried or kept, fetch was not taken for blocked.
      expect(service.sent.map((r) => r.path.replace('/api/ingestion', '')).sort()).toEqual(['/customEvent/batch', '/errors', '/events', '/groupidentify'])
      expect(tracker.getConnectionStatus()).toMatchObject({ blocked: false, queued: 0 })
      expect([tracker.viewLogs(), rejections]).toEqual([[], []])
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })

  test('properties that are not an object (a string, an array, a number) are refused the same way: the service would refuse the whole batch', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    for (const properties of ['checkout', ['a'], 42, { toJSON: () => 'text' }]) tracker.customEvent('bad', properties as never)
    tracker.customEvent('fine', { total: 3 })
    tracker.customEvent('no properties')
    tracker.groupIdentify('company', 'acme', ['x'] as never)
    await clock.advance(1000)
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['fine', 'no properties'])
    expect(service.to('/groupidentify')).toEqual([])
    expect(tracker.viewLogs()).toHaveLength(5)
  })
})

describe('addEvent', () => {
  test('an rrweb event goes into the recording as it is; anything else as an rrweb custom event', async () => {
    const { tracker, service, clock } = tracked()
    const rrweb = { type: 5, timestamp: 123, data: { tag: 'checkout-step', payload: { step: 2 } } }
    tracker.addEvent(rrweb)
    tracker.addEvent({ cart: 3 })
    await clock.advance(3000)
    expect(replayEvents(service)).toEqual([rrweb, { type: 5, timestamp: clock.now() - 3000, data: { tag: 'custom', payload: { cart: 3 } } }])
    const [chunk] = service.to('/events')
    expect(chunk.body).toMatchObject({ sessionId: tracker.getSessionId(), endUserId: tracker.getUserInfo().endUserId, windowId: tracker.getUserInfo().windowId, seq: 0, sdkVersion: SDK_VERSION })
    expect(chunk.body.automaticProperties).toMatchObject({ language: expect.any(String), timezone: expect.any(String), viewport: expect.stringMatching(/^\d+x\d+$/) })
  })

  test('an event that cannot be sent (a cycle, a BigInt) is refused with a warning, never thrown into the page', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    tracker.addEvent(cycle)
    tracker.addEvent({ type: 5, timestamp: 123, data: { total: 10n } })
    tracker.addEvent({ cart: 3 })
    await clock.advance(REPLAY_FLUSH_MS)
    expect(replayEvents(service).map((e) => e.data)).toEqual([{ tag: 'custom', payload: { cart: 3 } }])
    expect(tracker.viewLogs().map((entry) => entry.message)).toEqual([
      'addEvent: not a JSON object; not sent',
      'addEvent: not a JSON object; not sent',
    ])
  })

  test('replay is sent in chunks of at most about 1 MB of encoded JSON, each with its own seq', async () => {
    const { tracker, service, clock } = tracked()
    const text = 'x'.repeat(400_000)
    for (let i = 0; i < 3; i++) tracker.addEvent({ i, text })
    await clock.advance(REPLAY_FLUSH_MS)
    const chunks = service.to('/events')
    expect(chunks.map((r) => [r.body.seq, r.body.events.map((e: { data: { payload: { i: number } } }) => e.data.payload.i)])).toEqual([
      [0, [0, 1]],
      [1, [2]],
    ])
    for (const chunk of chunks) expect(utf8(JSON.stringify(chunk.body.events))).toBeLessThanOrEqual(CHUNK_MAX_BYTES)
  })

  test('chunks are sized in bytes of UTF-8, as the body limits count them: text of other scripts (2 to 3 bytes a character) makes no chunk over 1 MB', async () => {
    const { tracker, service, clock } = tracked()
    // 200,000 characters, 400 KB each.
    const text = 'é'.repeat(200_000)
    for (let i = 0; i < 3; i++) tracker.addEvent({ i, text })
    await clock.advance(REPLAY_FLUSH_MS)
    const chunks = service.to('/events')
    expect(chunks.map((r) => r.body.events.map((e: { data: { payload: { i: number } } }) => e.data.payload.i))).toEqual([[0, 1], [2]])
    for (const chunk of chunks) expect(utf8(JSON.stringify(chunk.body.events))).toBeLessThanOrEqual(CHUNK_MAX_BYTES)
  })
})

describe('identity', () => {
  test('identifyUser keeps the endUserId, merges the properties, sends /user and resolves with the id', async () => {
    const { tracker, service } = tracked()
    const id = tracker.getUserInfo().endUserId
    expect(await tracker.identifyUser({ userProperties: { email: 'ada@example.com', name: 'Ada' } })).toBe(id)
    expect(await tracker.identifyUser({ userProperties: { name: 'Ada L.', plan: 'pro' } })).toBe(id)
    expect(tracker.getUserAttributes()).toEqual({ email: 'ada@example.com', name: 'Ada L.', plan: 'pro' })
    expect(service.to('/user').map((request) => request.body)).toEqual([
      { userId: id, userAttributes: { email: 'ada@example.com', name: 'Ada' }, sessionId: tracker.getSessionId() },
      { userId: id, userAttributes: { email: 'ada@example.com', name: 'Ada L.', plan: 'pro' }, sessionId: tracker.getSessionId() },
    ])
    expect(tracker.getUserInfo()).toMatchObject({ endUserId: id, identified: true, attributes: { plan: 'pro' } })
  })

  test('an identify the service refuses (400 validation_failed) leaves its attributes out of the merged ones: later identifies go', async () => {
    const { tracker, service } = tracked()
    const id = tracker.getUserInfo().endUserId
    await tracker.identifyUser({ userProperties: { email: 'ada@example.com', plan: 'free' } })
    service.reply(({ body }) =>
      body?.userAttributes?.deep ? { status: 400, body: { error: { code: 'validation_failed', message: 'too deep' }, path: '/userAttributes/deep' } } : { status: 200, body: { success: true, endUserId: id } },
    )
    expect(await tracker.identifyUser({ userProperties: { deep: { a: 1 }, plan: 'pro' } })).toBe(id)
    expect(tracker.getUserAttributes()).toEqual({ email: 'ada@example.com', plan: 'free' })
    await tracker.identifyUser({ userProperties: { name: 'Ada' } })
    expect(service.to('/user').map((request) => request.body.userAttributes)).toEqual([
      { email: 'ada@example.com', plan: 'free' },
      { email: 'ada@example.com', plan: 'pro', deep: { a: 1 } },
      { email: 'ada@example.com', plan: 'free', name: 'Ada' },
    ])
    expect(tracker.getUserAttributes()).toEqual({ email: 'ada@example.com', plan: 'free', name: 'Ada' })
  })

  test('an identify refused after a logout under way takes nothing back onto the new anonymous user', async () => {
    const { tracker, service } = tracked()
    const id = tracker.getUserInfo().endUserId
    await tracker.identifyUser({ userProperties: { email: 'ada@example.com' } })
    service.reply(({ body }) => (body?.userAttributes?.deep ? { status: 400, body: { error: { code: 'validation_failed', message: 'too deep' } } } : { status: 200, body: { success: true, endUserId: id } }))
    const refused = tracker.identifyUser({ userProperties: { deep: { a: 1 }, email: 'ada@work.example' } })
    // Signed out on a shared computer while the identify is on its way.
    tracker.logout()
    expect(await refused).toBe(id)
    expect(tracker.getUserInfo().endUserId).not.toBe(id)
    expect(tracker.getUserAttributes()).toEqual({})
  })

  test('two identifies not awaited, the first refused: the second carried its value and is refused too; neither value stays', async () => {
    const { tracker, service, win, clock, close } = tracked()
    const id = tracker.getUserInfo().endUserId
    await tracker.identifyUser({ userProperties: { plan: 'free' } })
    service.reply(({ body }) => (body?.userAttributes?.deep ? { status: 400, body: { error: { code: 'validation_failed', message: 'too deep' } } } : { status: 200, body: { success: true, endUserId: id } }))
    await Promise.all([tracker.identifyUser({ userProperties: { deep: { a: 1 } } }), tracker.identifyUser({ userProperties: { name: 'Ada', plan: 'pro' } })])
    expect(tracker.getUserAttributes()).toEqual({ plan: 'free' })
    await tracker.identifyUser({ userProperties: { name: 'Ada' } })
    expect(service.to('/user').at(-1)?.body.userAttributes).toEqual({ plan: 'free', name: 'Ada' })
    // What is stored for the next page too.
    pageHide(win)
    const storage = storageOf(win)
    await close()
    expect(tracked({}, { storage, clock }).tracker.getUserAttributes()).toEqual({ plan: 'free', name: 'Ada' })
  })

  test('ids and attributes persist across a reload; isPreexistingUser says whether the browser was known', async () => {
    const first = tracked()
    expect(first.tracker.isPreexistingUser()).toBe(false)
    await first.tracker.identifyUser({ userProperties: { email: 'b@example.com' } })
    const before = first.tracker.getUserInfo()
    pageHide(first.win) // a reload leaves the page first
    const storage = storageOf(first.win)
    await first.close()
    const again = tracked({}, { storage, clock: first.clock })
    expect(again.tracker.isPreexistingUser()).toBe(true)
    expect(again.tracker.getUserInfo()).toEqual({ ...before, preexistingUser: true })
  })

  test('a full localStorage (every write refused) keeps one session and one end user for the page', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false }, { storage: { localStorageFull: true } })
    tracker.start()
    await settle()
    const { endUserId, sessionId } = tracker.getUserInfo()
    for (const name of ['a', 'b', 'c']) {
      tracker.customEvent(name)
      await clock.advance(2000)
    }
    await clock.advance(REPLAY_FLUSH_MS)
    expect(service.to('/customEvent/batch').map((r) => [r.body.sessionId, r.body.endUserId])).toEqual(Array(3).fill([sessionId, endUserId]))
    expect(tracker.getUserInfo()).toMatchObject({ endUserId, sessionId })
    // One session, so one full snapshot: a new session would take one more.
    expect(replayEvents(service).filter((event) => event.type === 2)).toHaveLength(1)
  })

  for (const [what, storage] of [
    ['full (every write refused)', { localStorageFull: true }],
    ['denied (access throws, as where cookies are blocked)', { storageDenied: true }],
  ] as const) {
    test(`localStorage ${what}: the tracker goes on in memory, throws nothing, and says so once in the log and in getConnectionStatus`, async () => {
      const { tracker, service, clock, win } = tracked({ logLevel: 'warn', enableAutomaticTracking: false }, { storage })
      tracker.configureLogging({ enableConsole: false })
      expect(() => tracker.start()).not.toThrow()
      await settle()
      tracker.customEvent('in memory')
      await tracker.identifyUser({ userProperties: { name: 'Ada' } })
      await clock.advance(REPLAY_FLUSH_MS)
      expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['in memory'])
      expect(tracker.getUserAttributes()).toEqual({ name: 'Ada' })
      expect(tracker.viewLogs().map((entry) => [entry.level, entry.message])).toEqual([['warn', STORAGE_REFUSED]])
      expect(tracker.getConnectionStatus().recommendations).toEqual([STORAGE_REFUSED])
      expect(() => pageHide(win)).not.toThrow()
    })
  }

  test('a localStorage that takes every write says nothing of it', async () => {
    const { tracker, clock } = tracked({ logLevel: 'warn', enableAutomaticTracking: false })
    tracker.start()
    tracker.customEvent('stored')
    await clock.advance(REPLAY_FLUSH_MS)
    expect(tracker.viewLogs()).toEqual([])
    expect(tracker.getConnectionStatus().recommendations).toEqual([])
  })

  test('a duplicated tab (a copy of a shown page\'s sessionStorage) gets a window of its own; its opener keeps its own', async () => {
    const first = tracked({ enableAutomaticTracking: false })
    first.tracker.start()
    await first.clock.advance(REPLAY_FLUSH_MS)
    const opener = first.tracker.getUserInfo()
    const copy = tracked({ enableAutomaticTracking: false }, { storage: storageOf(first.win), clock: first.clock, service: first.service })
    copy.tracker.start()
    await first.clock.advance(REPLAY_FLUSH_MS)
    const duplicate = copy.tracker.getUserInfo()
    expect(duplicate.windowId).not.toBe(opener.windowId)
    expect(duplicate).toMatchObject({ endUserId: opener.endUserId, sessionId: opener.sessionId })
    expect(first.tracker.getUserInfo().windowId).toBe(opener.windowId)
    // Each window's chunks count from 0, and no window id and seq is sent twice.
    const chunks = first.service.to('/events').map((r) => [r.body.windowId, r.body.seq])
    expect(chunks.filter(([windowId]) => windowId === duplicate.windowId).map(([, seq]) => seq)).toEqual([0])
    expect(new Set(chunks.map((chunk) => chunk.join('#'))).size).toBe(chunks.length)
  })

  test('a tracker started again in the same page (init with another key) keeps the window', async () => {
    const { tracker, win, service, clock } = tracked()
    const windowId = tracker.getUserInfo().windowId
    const again = ServiceTracker.init('sl_dev_other_key', { ingestionUrl: SERVICE_BASE, logLevel: 'none' }, { window: win, fetch: service.fetch, clock, scriptUrl: null })
    expect(again).not.toBe(tracker)
    expect(again.getUserInfo().windowId).toBe(windowId)
    again.stop()
  })

  test('logout: sends what is queued as the old user, then a new anonymous user in a new session', async () => {
    const { tracker, service, clock } = tracked()
    await tracker.identifyUser({ userProperties: { email: 'c@example.com' } })
    const before = tracker.getUserInfo()
    tracker.customEvent('before-logout')
    tracker.logout()
    tracker.customEvent('after-logout')
    await clock.advance(EVENT_FLUSH_MS)
    const after = tracker.getUserInfo()
    expect(after.endUserId).not.toBe(before.endUserId)
    expect(after.sessionId).not.toBe(before.sessionId)
    expect(after).toMatchObject({ attributes: {}, identified: false })
    expect(service.to('/customEvent/batch').map((r) => [r.body.endUserId, r.body.sessionId, r.body.events[0].eventName])).toEqual([
      [before.endUserId, before.sessionId, 'before-logout'],
      [after.endUserId, after.sessionId, 'after-logout'],
    ])
  })

  test('groupIdentify sends /groupidentify with the session and end user', async () => {
    const { tracker, service } = tracked()
    tracker.groupIdentify('company', 'acme', { plan: 'enterprise' })
    await settle()
    expect(service.to('/groupidentify').map((r) => r.body)).toEqual([
      { sessionId: tracker.getSessionId(), endUserId: tracker.getUserInfo().endUserId, groupType: 'company', groupKey: 'acme', groupProperties: { plan: 'enterprise' } },
    ])
  })
})

describe('page views and navigation', () => {
  test('trackPageView: the current URL by default, or the one given (relative to the page)', async () => {
    const { tracker, service, clock } = tracked({}, { url: 'http://shop.test/cart?x=1' })
    tracker.trackPageView()
    tracker.trackPageView('/checkout')
    await clock.advance(EVENT_FLUSH_MS)
    expect(service.to('/customEvent/batch')[0].body.events.map((e: any) => [e.eventName, e.eventProperties])).toEqual([
      // Privacy-first (the default): the parameter's value is not sent.
      ['$pageview', { url: 'http://shop.test/cart?x=[redacted]', path: '/cart' }],
      ['$pageview', { url: 'http://shop.test/checkout', path: '/checkout' }],
    ])
  })

  test('trackNavigationEvent(type, from, to)', async () => {
    const { tracker, service, clock } = tracked()
    tracker.trackNavigationEvent('push', 'http://shop.test/a', 'http://shop.test/b')
    await clock.advance(EVENT_FLUSH_MS)
    expect(service.to('/customEvent/batch')[0].body.events[0]).toMatchObject({ eventName: '$navigation', eventProperties: { type: 'push', from: 'http://shop.test/a', to: 'http://shop.test/b' } })
  })

  test('getCurrentUrl follows the page', () => {
    const { tracker, win } = tracked({}, { url: 'http://shop.test/a' })
    win.history.pushState({}, '', '/b?q=1')
    expect(tracker.getCurrentUrl()).toBe('http://shop.test/b?q=1')
  })
})

describe('errors', () => {
  test('captureError: a handled report with stack, release and context', async () => {
    const { tracker, service, clock } = tracked({ release: 'web@1.2.3' })
    const error = new TypeError('cart is undefined')
    tracker.captureError(error, { step: 'checkout' })
    tracker.captureError('a plain string')
    await clock.advance(1000)
    const [request] = service.to('/errors')
    const owner = { sessionId: tracker.getSessionId(), endUserId: tracker.getUserInfo().endUserId }
    expect(request.body).toEqual({
      ...owner,
      errors: [
        { ...owner, name: 'TypeError', message: 'cart is undefined', stack: error.stack, url: 'http://shop.test/', timestampMs: clock.now() - 1000, release: 'web@1.2.3', level: 'error', handled: true, context: { step: 'checkout' } },
        { ...owner, name: 'Error', message: 'a plain string', url: 'http://shop.test/', timestampMs: clock.now() - 1000, release: 'web@1.2.3', level: 'error', handled: true },
      ],
    })
  })
})

describe('unredacted fields', () => {
  test('set, get, has, clear; invalid selectors are ignored with a warning', () => {
    const { tracker } = tracked({ logLevel: 'warn' })
    tracker.configureLogging({ enableConsole: false })
    expect(tracker.hasUnredactedFields()).toBe(false)
    tracker.setUnredactedFields(['.product-name', 'h1', '[[bad'])
    expect(tracker.getUnredactedFields()).toEqual(['.product-name', 'h1'])
    expect(tracker.hasUnredactedFields()).toBe(true)
    expect(tracker.viewLogs().map((e) => e.message)).toEqual(['ignored an invalid selector: [[bad'])
    tracker.clearUnredactedFields()
    expect(tracker.getUnredactedFields()).toEqual([])
    expect(tracker.hasUnredactedFields()).toBe(false)
  })

  test('start from redactionStrategy.unredactSelectors; visibility-first mode ignores them (with a warning)', () => {
    expect(tracked({ redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.public'] } }).tracker.getUnredactedFields()).toEqual(['.public'])
    const visible = tracked({ logLevel: 'warn', redactionStrategy: { mode: 'visibility-first' } }).tracker
    visible.configureLogging({ enableConsole: false })
    visible.setUnredactedFields(['.x'])
    expect(visible.getUnredactedFields()).toEqual([])
    expect(visible.viewLogs().map((e) => e.message)).toEqual(['unredacted fields apply in privacy-first mode only'])
  })
})

describe('logging', () => {
  test('logLevel filters; configureLogging changes level, console and storage; viewLogs shows the entries', () => {
    const printed: string[] = []
    const { tracker, win } = tracked({ logLevel: 'error' })
    win.console.warn = (...args: unknown[]) => void printed.push(args.join(' '))
    tracker.customEvent('')
    expect(tracker.viewLogs()).toEqual([])
    tracker.configureLogging({ level: 'warn' })
    tracker.customEvent('')
    expect(printed).toEqual(['[sightline] customEvent needs an event name'])
    expect(tracker.viewLogs()).toEqual([{ time: expect.any(Number), level: 'warn', message: 'customEvent needs an event name' }])
    expect(JSON.parse(win.sessionStorage.getItem('sl_logs')!)).toHaveLength(1)
    tracker.configureLogging({ enableConsole: false, enableStorage: false })
    tracker.customEvent('')
    expect(printed).toHaveLength(1)
    expect(win.sessionStorage.getItem('sl_logs')).toBeNull()
    expect(tracker.viewLogs()).toHaveLength(2)
  })

  test('an unknown logLevel (a typo) logs at the default level, warn, rather than nothing', () => {
    const { tracker } = tracked({ logLevel: 'verbose' as never })
    tracker.configureLogging({ enableConsole: false })
    tracker.customEvent('')
    expect(tracker.viewLogs().map((entry) => entry.message)).toEqual(['customEvent needs an event name'])
  })

  test('logLevel none is silent', () => {
    const { tracker } = tracked({ logLevel: 'none' })
    tracker.customEvent('')
    expect(tracker.viewLogs()).toEqual([])
  })
})

describe('connection', () => {
  test('testConnection is the only caller of the deprecated init endpoint', async () => {
    const { tracker, service, clock } = tracked()
    tracker.start()
    tracker.customEvent('x')
    await clock.advance(10_000)
    expect(service.to('/init')).toEqual([])
    service.reply(() => ({ status: 200, body: { sessionId: 's', endUserId: 'u' } }))
    expect(await tracker.testConnection()).toEqual({ ok: true, status: 200, latencyMs: 0, ingestionUrl: SERVICE_BASE, blocked: false })
    expect(service.to('/init').map((r) => r.body)).toEqual([
      { sessionId: tracker.getSessionId(), endUserId: tracker.getUserInfo().endUserId, entryURL: 'http://shop.test/', sdkVersion: SDK_VERSION },
    ])
  })

  test('testConnection tells blocked (fetch fails, the service answers) from unreachable', async () => {
    const { tracker, service } = tracked()
    service.reply((request) => (request.path === '/health/simple' ? { status: 200 } : 'network-error'))
    expect(await tracker.testConnection()).toMatchObject({ ok: false, status: 0, blocked: true })
    service.reply(() => 'network-error')
    expect(await tracker.testConnection()).toMatchObject({ ok: false, status: 0, blocked: false })
  })

  test('getConnectionStatus: where it sends and how, what waits, what was dropped, and advice', async () => {
    const { tracker, service, clock, win } = tracked()
    expect(tracker.getConnectionStatus()).toEqual({
      ingestionUrl: SERVICE_BASE,
      source: 'option',
      blocked: false,
      reachable: true,
      transport: 'fetch',
      online: true,
      stopped: null,
      queued: 0,
      dropped: { outbox: 0, error_flood: 0 },
      recommendations: [],
    })
    service.reply((request) => (request.path === '/health/simple' ? { status: 200 } : request.headers.authorization ? 'network-error' : { status: 400 }))
    tracker.customEvent('x')
    // Its retries: fetch is taken for blocked at the third failure in a row.
    await clock.advance(5000)
    Object.defineProperty(win.navigator, 'onLine', { value: false, configurable: true })
    tracker.customEvent('y')
    await clock.advance(EVENT_FLUSH_MS)
    const status = tracker.getConnectionStatus()
    expect(status).toMatchObject({ blocked: true, transport: 'beacon', online: false, queued: 1 })
    expect(status.recommendations).toEqual(['Fetch is blocked: load the tracker through the relay (<prefix>/t.js)', 'Offline: data is kept until back online'])
  })

  test('getConnectionStatus: a blocklist that stops every request to the service (the probe too) shows as no answer, until one comes', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    service.reply(() => 'network-error')
    tracker.customEvent('lost')
    await clock.advance(EVENT_FLUSH_MS)
    expect(tracker.getConnectionStatus()).toMatchObject({ blocked: false, reachable: false, transport: 'fetch', online: true })
    expect(tracker.getConnectionStatus().recommendations).toEqual([
      `No answer from ${SERVICE_BASE}: the service is down, or blocked; load the tracker through the relay (<prefix>/t.js)`,
    ])
    service.reply(() => ({ status: 200, body: { success: true } }))
    await clock.advance(60_000)
    expect(service.to('/customEvent/batch')).toHaveLength(1)
    expect(tracker.getConnectionStatus()).toMatchObject({ reachable: true, recommendations: [] })
  })

  test('getConnectionStatus: no answer from a first-party relay does not advise the relay', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false, ingestionUrl: undefined }, { url: 'http://shop.test/cart', scriptUrl: 'http://shop.test/_sl/t.js' })
    service.reply(() => 'network-error')
    tracker.customEvent('lost')
    await clock.advance(EVENT_FLUSH_MS)
    expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: 'http://shop.test/_sl', reachable: false })
    expect(tracker.getConnectionStatus().recommendations).toEqual(['No answer from http://shop.test/_sl: the service is down, or blocked'])
  })

  test('getConnectionStatus: core down or too slow behind the relay (502, 504) is no answer, with its advice; core back, all is well', async () => {
    const relay = { url: 'http://shop.test/cart', scriptUrl: 'http://shop.test/_sl/t.js' }
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false, ingestionUrl: undefined }, relay)
    const down = ['No answer from http://shop.test/_sl: the service is down, or blocked']
    for (const [status, code] of [[502, 'upstream_unreachable'], [504, 'upstream_timeout']] as const) {
      service.reply(() => ({ status, body: { success: false, error: { code, message: 'core did not answer' } } }))
      tracker.customEvent(code)
      await clock.advance(EVENT_FLUSH_MS)
      expect(tracker.getConnectionStatus()).toMatchObject({ reachable: false, blocked: false, transport: 'fetch', recommendations: down })
    }
    service.reply(() => ({ status: 200, body: { success: true } }))
    await clock.advance(60_000)
    const stored = service.sent.filter((r) => r.path === '/_sl/api/ingestion/customEvent/batch').slice(-2)
    expect(stored.flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName)).sort()).toEqual(['upstream_timeout', 'upstream_unreachable'])
    expect(tracker.getConnectionStatus()).toMatchObject({ reachable: true, recommendations: [] })
  })

  test('getConnectionStatus: fetch blocked on a first-party relay advises letting the Authorization header through, not the relay', async () => {
    const relay = { url: 'http://shop.test/cart', scriptUrl: 'http://shop.test/_sl/t.js' }
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false, ingestionUrl: undefined }, relay)
    service.reply((request) => (request.path.endsWith('/health/simple') ? { status: 200 } : request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
    tracker.customEvent('x')
    await clock.advance(5000)
    expect(tracker.getConnectionStatus()).toMatchObject({ source: 'script', blocked: true, transport: 'beacon', reachable: true })
    expect(tracker.getConnectionStatus().recommendations).toEqual([
      'Fetch is blocked: let the Authorization header through the proxy or CDN in front (beacons meanwhile)',
    ])
  })
})

describe('start and stop', () => {
  test('stop removes every timer and listener: nothing more is recorded, beaten or flushed on hide', async () => {
    const { tracker, service, clock, win } = tracked()
    tracker.start()
    await clock.advance(100)
    tracker.customEvent('queued')
    tracker.stop()
    await settle()
    expect(clock.pending()).toEqual([])
    const sent = service.sent.length
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: any) => e.eventName))).toEqual(['$pageview', 'queued'])
    win.document.body.innerHTML = '<p>after stop</p>'
    win.dispatchEvent(new win.Event('pagehide'))
    await clock.advance(60_000)
    expect(service.sent.length).toBe(sent)
  })

  test('stop keeps what it could not deliver: its last flush, never answered, and a retry waiting go to the outbox; no retry timer is left', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    service.reply((request) => (request.body?.events[0].eventName === 'retried' ? { status: 503 } : 'no-answer'))
    tracker.customEvent('retried')
    await clock.advance(EVENT_FLUSH_MS)
    expect(clock.pending()).toHaveLength(1)
    tracker.customEvent('flushed')
    tracker.stop()
    await settle()
    expect(tracker.getConnectionStatus().queued).toBe(2)
    // What is left is the flush's own request, until the page gives up on it; nothing is retried then.
    expect(clock.pending()).toEqual([REQUEST_TIMEOUT_MS])
    await clock.advance(REQUEST_TIMEOUT_MS)
    expect(clock.pending()).toEqual([])
    expect(tracker.getConnectionStatus().queued).toBe(2)
    expect(service.to('/customEvent/batch').map((r) => r.body.events[0].eventName)).toEqual(['retried', 'flushed'])
  })

  test('after stop nothing is drained and nothing waits in memory: what fails goes to the outbox, with no timer, until the tracker starts again', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    // An hour asked for: kept in the outbox.
    service.reply(() => ({ status: 503, headers: { 'retry-after': '3600' } }))
    tracker.customEvent('kept')
    await clock.advance(EVENT_FLUSH_MS)
    expect(tracker.getConnectionStatus().queued).toBe(1)
    // The minute it holds every send for.
    await clock.advance(RETRY_MAX_MS)
    service.reply((request) => (request.path.endsWith('/user') ? { status: 503 } : { status: 200, body: { success: true } }))
    tracker.customEvent('last')
    tracker.stop()
    await settle()
    // Its success drains nothing (no page hide would keep what a drain holds), and a call after stop is not retried in memory.
    await tracker.identifyUser({ userProperties: { plan: 'pro' } })
    expect(service.sent.map((r) => r.body.events?.[0].eventName ?? r.path)).toEqual(['kept', 'last', '/api/ingestion/user'])
    expect(clock.pending()).toEqual([])
    expect(tracker.getConnectionStatus().queued).toBe(2)

    service.reply(() => ({ status: 200, body: { success: true } }))
    tracker.start()
    await settle()
    expect(tracker.getConnectionStatus().queued).toBe(0)
    expect(service.to('/customEvent/batch').map((r) => r.body.events[0].eventName)).toEqual(['kept', 'last', 'kept'])
  })

  test('a call after stop is sent at once, as stop sends what is queued, and leaves no timer; what fails goes to the outbox', async () => {
    const { tracker, service, clock } = tracked({ enableAutomaticTracking: false })
    tracker.stop()
    // Half an hour on, a call that counts as activity starts a new session too.
    await clock.advance(SESSION_IDLE_MS)
    tracker.customEvent('after stop')
    tracker.trackPageView()
    tracker.captureError(new Error('after stop'))
    tracker.addEvent({ note: 'after stop' })
    await settle()
    expect(clock.pending()).toEqual([])
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: any) => e.eventName))).toEqual(['after stop', '$pageview'])
    expect(service.to('/errors').map((r) => r.body.errors[0].message)).toEqual(['after stop'])
    expect(replayEvents(service).map((e) => e.data.payload)).toEqual([{ note: 'after stop' }])

    service.reply(() => ({ status: 503 }))
    tracker.customEvent('kept')
    await settle()
    expect(clock.pending()).toEqual([])
    expect(tracker.getConnectionStatus().queued).toBe(1)
  })

  test('start twice is one start; start after stop starts again', async () => {
    const { tracker, service, clock } = tracked()
    tracker.start()
    tracker.start()
    await clock.advance(100)
    expect(service.to('/heartbeat')).toHaveLength(1)
    tracker.stop()
    tracker.start()
    await clock.advance(100)
    expect(service.to('/heartbeat')).toHaveLength(2)
    expect(clock.pending()).toContain(30_000 - 100)
  })
})
