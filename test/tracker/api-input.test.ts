import { afterEach, describe, expect, test } from 'bun:test'
import { ServiceTracker } from '@sightline/tracker'
import { EVENT_FLUSH_MS } from '@sightline/tracker/queue'
import { settle } from './helpers/clock'
import { SERVICE_BASE } from './helpers/service'
import { KEY, closeAll, tracked } from './helpers/tracker'

afterEach(closeAll)

const circular: Record<string, unknown> = { name: 'loop' }
circular.self = circular
const HUGE = 'x'.repeat(1_000_000)

type Call = (tracker: ServiceTracker) => unknown
/**
 * Wrong-typed and malformed arguments for every public method that takes any, and what comes of them:
 * `refused`, warned about and nothing done; or taken as well as they can be, `sends` what reaches the
 * service and `warns` of what was left out (a context that cannot be sent, selectors that are invalid).
 */
type Outcome = { refused: true } | { sends: string[]; warns?: number }
const CALLS: [label: string, call: Call, outcome: Outcome][] = [
  ['customEvent(null)', (t) => t.customEvent(null as never), { refused: true }],
  ['customEvent(42)', (t) => t.customEvent(42 as never), { refused: true }],
  ['customEvent({})', (t) => t.customEvent({} as never), { refused: true }],
  ['customEvent(name, a cycle)', (t) => t.customEvent('e', circular), { refused: true }],
  ['customEvent(name, a BigInt)', (t) => t.customEvent('e', { n: 10n } as never), { refused: true }],
  ['customEvent(name, a string)', (t) => t.customEvent('e', 'props' as never), { refused: true }],
  ['customEvent(a huge name)', (t) => t.customEvent(HUGE), { sends: ['/customEvent/batch'] }],
  ['addEvent(a cycle)', (t) => t.addEvent(circular), { refused: true }],
  ['addEvent(null)', (t) => t.addEvent(null), { sends: [] }],
  ['identifyUser()', (t) => (t.identifyUser as (u?: unknown) => unknown)(), { refused: true }],
  ['identifyUser(null)', (t) => t.identifyUser(null as never), { refused: true }],
  ['identifyUser(42)', (t) => t.identifyUser(42 as never), { refused: true }],
  ['identifyUser({ userProperties: a cycle })', (t) => t.identifyUser({ userProperties: circular }), { refused: true }],
  ['identifyUser({ userProperties: a string })', (t) => t.identifyUser({ userProperties: 'x' as never }), { refused: true }],
  ['groupIdentify(null, key)', (t) => t.groupIdentify(null as never, 'k'), { refused: true }],
  ['groupIdentify(type, 42)', (t) => t.groupIdentify('team', 42 as never), { refused: true }],
  ['groupIdentify(a cycle, a cycle)', (t) => t.groupIdentify(circular as never, circular as never), { refused: true }],
  ['groupIdentify(type, key, a cycle)', (t) => t.groupIdentify('team', 'k', circular), { refused: true }],
  ['captureError(null)', (t) => t.captureError(null), { sends: ['/errors'] }],
  ['captureError(an error holding a cycle, a cycle)', (t) => t.captureError(Object.assign(new Error('with a loop'), { loop: circular }), circular), { sends: ['/errors'], warns: 1 }],
  ['trackPageView(an unparseable URL)', (t) => t.trackPageView('http://[bad'), { refused: true }],
  ['trackPageView(a symbol)', (t) => t.trackPageView(Symbol('url') as never), { refused: true }],
  ['trackNavigationEvent(null, from, to)', (t) => t.trackNavigationEvent(null as never, '/a', '/b'), { refused: true }],
  ['trackNavigationEvent(type, 42, {})', (t) => t.trackNavigationEvent('push', 42 as never, {} as never), { refused: true }],
  ['trackNavigationEvent(a cycle, from, to)', (t) => t.trackNavigationEvent(circular as never, '/a', '/b'), { refused: true }],
  ['setUnredactedFields(null)', (t) => t.setUnredactedFields(null as never), { refused: true }],
  ['setUnredactedFields(42)', (t) => t.setUnredactedFields(42 as never), { refused: true }],
  ['setUnredactedFields(a selector, not a list)', (t) => t.setUnredactedFields('.public' as never), { refused: true }],
  ['setUnredactedFields({})', (t) => t.setUnredactedFields({} as never), { refused: true }],
  ['setUnredactedFields([invalid CSS, a number, null])', (t) => t.setUnredactedFields(['[[bad', 42, null] as never), { sends: [], warns: 3 }],
  ['setUnredactedFields([a huge selector])', (t) => t.setUnredactedFields([HUGE]), { sends: [], warns: 0 }],
  ['setUnredactedFields([a symbol])', (t) => t.setUnredactedFields([Symbol('s')] as never), { refused: true }],
  ['configureLogging(null)', (t) => t.configureLogging(null as never), { refused: true }],
  ['configureLogging(undefined)', (t) => (t.configureLogging as (c?: unknown) => void)(), { refused: true }],
]

describe('public methods given wrong-typed or malformed arguments never throw into the page', () => {
  test.each(CALLS)('%s', async (label, call, outcome) => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn', enableAutomaticTracking: false })
    tracker.configureLogging({ enableConsole: false })
    const rejections: unknown[] = []
    const onRejection = (reason: unknown) => rejections.push(reason)
    process.on('unhandledRejection', onRejection)
    try {
      let result: unknown
      expect(() => (result = call(tracker))).not.toThrow()
      if (result instanceof Promise) expect(await result).toBe(tracker.getUserInfo().endUserId)
      await clock.advance(EVENT_FLUSH_MS + 1000)
      const warnings = tracker.viewLogs().filter((entry) => entry.level === 'warn')
      if ('refused' in outcome) {
        expect(warnings).toHaveLength(1)
        expect(service.sent).toEqual([])
      } else {
        expect(warnings).toHaveLength(outcome.warns ?? 0)
        expect(service.sent.map((r) => r.path.replace('/api/ingestion', ''))).toEqual(outcome.sends)
      }
      if (!label.includes('huge selector')) expect(tracker.getUnredactedFields()).toEqual([])
      // Nothing else is lost: what comes next is sent, and stopping (which persists what waits) works.
      tracker.customEvent('next', { ok: true })
      await clock.advance(EVENT_FLUSH_MS)
      expect(service.sent.at(-1)!.body.events.map((e: { eventName: string }) => e.eventName)).toEqual(['next'])
      expect(() => tracker.stop()).not.toThrow()
      await settle()
      expect(rejections).toEqual([])
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })

  test('every public method works detached from the tracker (destructured, or handed over as a callback)', async () => {
    const { tracker, service, clock } = tracked({ logLevel: 'warn', enableAutomaticTracking: false })
    tracker.configureLogging({ enableConsole: false })
    const { customEvent, getSessionId, getUserInfo, groupIdentify, setUnredactedFields, getUnredactedFields, viewLogs } = tracker
    expect(() => customEvent('detached', { n: 1 })).not.toThrow()
    expect(getSessionId()).toBe(tracker.getSessionId())
    expect(getUserInfo().endUserId).toBe(tracker.getUserInfo().endUserId)
    setUnredactedFields(['.shown'])
    expect(getUnredactedFields()).toEqual(['.shown'])
    // As a callback: `this` is whatever the caller makes it.
    const endUserId = await Promise.resolve({ userProperties: { plan: 'pro' } }).then(tracker.identifyUser)
    expect(endUserId).toBe(tracker.getUserInfo().endUserId)
    await Promise.resolve('as a callback').then(tracker.customEvent)
    groupIdentify.call(undefined, 'company', 'acme')
    // Still guarded: a wrong argument warns, detached too.
    customEvent(42 as unknown as string)
    await clock.advance(EVENT_FLUSH_MS)
    await settle()
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['detached', 'as a callback'])
    expect(service.to('/user').map((r) => r.body.userAttributes)).toEqual([{ plan: 'pro' }])
    expect(service.to('/groupidentify').map((r) => r.body.groupKey)).toEqual(['acme'])
    expect(viewLogs().map((entry) => entry.message)).toEqual(['customEvent needs an event name'])
  })

  test('getters and calls without arguments, given some anyway, answer as usual', async () => {
    const { tracker } = tracked({ logLevel: 'warn', enableAutomaticTracking: false })
    tracker.configureLogging({ enableConsole: false })
    const t = tracker as unknown as Record<string, (...args: unknown[]) => unknown>
    for (const name of ['getUserAttributes', 'clearUnredactedFields', 'hasUnredactedFields', 'getUnredactedFields', 'getSessionId', 'getCurrentUrl', 'getUserInfo', 'isPreexistingUser', 'getConnectionStatus', 'viewLogs', 'logout', 'start', 'stop']) {
      expect(() => t[name](null, circular, 42)).not.toThrow()
    }
    expect(tracker.getSessionId()).toBeString()
    expect((await (t.testConnection(circular) as Promise<{ ok: boolean }>)).ok).toBe(true)
    expect(tracker.viewLogs()).toEqual([])
  })
})

describe('init given options it cannot use', () => {
  const options: [label: string, options: unknown][] = [
    ['null', null],
    ['a number', 42],
    ['an unparseable ingestionUrl', { ingestionUrl: 'http://[bad' }],
    ['unredactSelectors that are no list', { redactionStrategy: { mode: 'privacy-first', unredactSelectors: 42 } }],
    ['redactSelectors that are no list', { redactionStrategy: { mode: 'visibility-first', redactSelectors: {} } }],
    ['automaticTrackingOptions null', { automaticTrackingOptions: null, ingestionUrl: SERVICE_BASE }],
  ]
  test('an ingestionUrl that is no string (42) is refused with a warning, not taken as a path', () => {
    const t = tracked({ logLevel: 'warn' })
    t.tracker.stop()
    const tracker = ServiceTracker.init(KEY + '_other', { ingestionUrl: 42 as never }, { window: t.win, fetch: t.service.fetch, clock: t.clock, scriptUrl: null })
    expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: 'http://shop.test/_sl', source: 'default' })
    expect(tracker.viewLogs().map((entry) => entry.message)).toEqual([expect.stringMatching(/^init: .*; the options are ignored$/)])
    tracker.stop()
  })

  test.each(options)('%s: a tracker that works, never an exception', async (_label, given) => {
    const t = tracked({ logLevel: 'warn' })
    t.tracker.stop()
    const tracker = ServiceTracker.init(KEY + '_other', given as never, { window: t.win, fetch: t.service.fetch, clock: t.clock, scriptUrl: null })
    expect(tracker).toBeInstanceOf(ServiceTracker)
    tracker.configureLogging({ enableConsole: false })
    expect(() => tracker.start()).not.toThrow()
    tracker.customEvent('works')
    await t.clock.advance(EVENT_FLUSH_MS)
    tracker.stop()
    expect(t.service.sent.some((r) => r.body?.events?.some((e: { eventName?: string }) => e.eventName === 'works'))).toBe(true)
  })
})
