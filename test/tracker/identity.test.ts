import { describe, expect, test } from 'bun:test'
import { SESSION_IDLE_MS, SESSION_MAX_MS, createIdentity } from '@sightline/tracker/identity'
import { webStorage, type KeyValue } from '@sightline/tracker/storage'

const memoryStore = (): KeyValue => webStorage(() => null)

function setup(stores = { local: memoryStore(), tab: memoryStore(), cookie: memoryStore() }) {
  let now = Date.UTC(2025, 0, 1)
  let counter = 0
  let newSessions = 0
  const identity = createIdentity(stores.local, stores.tab, stores.cookie, () => now, () => `id-${++counter}`, () => newSessions++)
  return { identity, stores, newSessions: () => newSessions, advance: (ms: number) => (now += ms) }
}

describe('session model', () => {
  test('ids are made once and kept: endUserId, windowId, sessionId', () => {
    const { identity } = setup()
    expect(identity.endUserId).toBe('id-1')
    expect(identity.windowId).toBe('id-2')
    expect(identity.sessionId(true)).toBe('id-3')
    expect(identity.sessionId(false)).toBe('id-3')
    expect(identity.preexisting).toBe(false)
  })

  test(`a session ends after ${SESSION_IDLE_MS / 60000} minutes without activity`, () => {
    const { identity, advance, newSessions } = setup()
    const first = identity.sessionId(true)
    advance(SESSION_IDLE_MS - 1)
    expect(identity.sessionId(true)).toBe(first)
    advance(SESSION_IDLE_MS - 1)
    expect(identity.current()).toBe(first)
    advance(1)
    expect(identity.current()).toBeNull()
    // Without activity nothing renews it (a heartbeat or the page's own DOM changes do not).
    expect(identity.sessionId(false)).toBe(first)
    const second = identity.sessionId(true)
    expect(second).not.toBe(first)
    expect(newSessions()).toBe(1)
  })

  test(`and ${SESSION_MAX_MS / 3600000} hours after it began, however active`, () => {
    const { identity, advance } = setup()
    const first = identity.sessionId(true)
    for (let t = 0; t < SESSION_MAX_MS - 10 * 60000; t += 10 * 60000) {
      advance(10 * 60000)
      expect(identity.sessionId(true)).toBe(first)
    }
    advance(10 * 60000)
    expect(identity.sessionId(true)).not.toBe(first)
  })

  test('a clock set back (a wrong clock corrected) does not keep the session alive: the idle and age limits hold from then on', () => {
    const { identity, advance } = setup()
    const first = identity.sessionId(true)
    advance(10 * 60000)
    identity.sessionId(true)
    // A correction of a few seconds is no jump: the session goes on.
    advance(-5000)
    expect(identity.sessionId(true)).toBe(first)
    // Set back a day, then 5 idle hours: times stored ahead of the clock are no activity since.
    advance(-SESSION_MAX_MS)
    advance(5 * 3600000)
    const second = identity.sessionId(true)
    expect(second).not.toBe(first)
    advance(SESSION_IDLE_MS)
    expect(identity.current()).toBeNull()
  })

  test('tabs of one origin share the session; each tab has its own window id and chunk sequence', () => {
    const local = memoryStore()
    const cookie = memoryStore()
    const one = setup({ local, cookie, tab: memoryStore() })
    const two = setup({ local, cookie, tab: memoryStore() })
    expect(two.identity.endUserId).toBe(one.identity.endUserId)
    expect(two.identity.preexisting).toBe(true)
    expect(two.identity.sessionId(true)).toBe(one.identity.sessionId(true))
    expect(two.identity.windowId).not.toBe(one.identity.windowId)
    expect([one.identity.nextSeq(), one.identity.nextSeq(), two.identity.nextSeq()]).toEqual([0, 1, 0])
  })

  /** Two tabs of one origin on one clock: their own sessionStorage, the origin's localStorage and cookies. */
  function twoTabs() {
    let now = Date.UTC(2025, 0, 1)
    let counter = 0
    const local = memoryStore()
    const cookie = memoryStore()
    const tab = () => {
      const told = { newSessions: 0 }
      const identity = createIdentity(local, memoryStore(), cookie, () => now, () => `id-${++counter}`, () => told.newSessions++)
      return Object.assign(told, { identity })
    }
    return { one: tab(), two: tab(), advance: (ms: number) => (now += ms) }
  }

  test('a session another tab started (activity after the last one ended) is new to this tab too: told once, for a full snapshot in it', () => {
    const { one, two, advance } = twoTabs()
    const first = one.identity.sessionId(true)
    expect(two.identity.sessionId(true)).toBe(first)
    advance(SESSION_IDLE_MS)
    const second = one.identity.sessionId(true)
    expect(second).not.toBe(first)
    expect(one.newSessions).toBe(1)
    // The other tab's next event, with activity or not, is in the new session, and new to it.
    expect(two.identity.sessionId(false)).toBe(second)
    expect(two.identity.sessionId(true)).toBe(second)
    expect([one.newSessions, two.newSessions]).toEqual([1, 1])
  })

  test('a logout in another tab is this tab\'s too: the new anonymous end user, in the new session, told once', () => {
    const { one, two } = twoTabs()
    const before = two.identity.endUserId
    two.identity.sessionId(true)
    one.identity.reset()
    expect(one.newSessions).toBe(0)
    expect(two.identity.endUserId).toBe(one.identity.endUserId)
    expect(two.identity.endUserId).not.toBe(before)
    expect(two.identity.sessionId(false)).toBe(one.identity.sessionId(false))
    expect([one.newSessions, two.newSessions]).toEqual([0, 1])
  })

  test('a reload keeps all three and continues the sequence', () => {
    const first = setup()
    first.identity.nextSeq()
    const again = setup(first.stores)
    expect(again.identity.endUserId).toBe(first.identity.endUserId)
    expect(again.identity.windowId).toBe(first.identity.windowId)
    expect(again.identity.sessionId(true)).toBe(first.identity.sessionId(true))
    expect(again.identity.nextSeq()).toBe(1)
  })

  test('a tab whose page is shown is taken: a copy of its storage (a duplicated tab) starts a window of its own', () => {
    const shown = setup()
    shown.identity.nextSeq()
    shown.identity.holdTab()
    const copyOf = (stores: typeof shown.stores) => ({ ...stores, tab: webStorage(() => null) })
    const tabCopy = copyOf(shown.stores)
    tabCopy.tab.set('sl_wid', shown.identity.windowId)
    tabCopy.tab.set('sl_seq', '1')
    tabCopy.tab.set('sl_shown', '1')
    const duplicate = setup(tabCopy)
    expect(duplicate.identity.windowId).not.toBe(shown.identity.windowId)
    expect(duplicate.identity.nextSeq()).toBe(0)
    // Left (pagehide) before the next page loads in the tab: a reload, the same window.
    shown.identity.releaseTab()
    expect(setup(shown.stores).identity.windowId).toBe(shown.identity.windowId)
  })

  test('endUserId lives in localStorage and a cookie: either one restores the other', () => {
    const first = setup()
    const cookieOnly = setup({ local: memoryStore(), tab: memoryStore(), cookie: first.stores.cookie })
    expect(cookieOnly.identity.endUserId).toBe(first.identity.endUserId)
    expect(cookieOnly.stores.local.get('sl_uid')).toBe(first.identity.endUserId)
    const localOnly = setup({ local: first.stores.local, tab: memoryStore(), cookie: memoryStore() })
    expect(localOnly.identity.endUserId).toBe(first.identity.endUserId)
    expect(localOnly.stores.cookie.get('sl_uid')).toBe(first.identity.endUserId)
  })

  test('a stored id that is not a valid id is replaced', () => {
    const local = memoryStore()
    local.set('sl_uid', 'bad id with spaces')
    const { identity } = setup({ local, tab: memoryStore(), cookie: memoryStore() })
    expect(identity.endUserId).toMatch(/^id-/)
    expect(identity.preexisting).toBe(false)
  })

  test('attributes merge in storage; reset makes a new anonymous user in a new session', () => {
    const { identity } = setup()
    const user = identity.endUserId
    const session = identity.sessionId(true)
    identity.setAttributes({ email: 'a@example.com' })
    expect(identity.attributes()).toEqual({ email: 'a@example.com' })
    identity.reset()
    expect(identity.endUserId).not.toBe(user)
    expect(identity.sessionId(true)).not.toBe(session)
    expect(identity.attributes()).toEqual({})
  })
})
