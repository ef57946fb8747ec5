import { json, readJson, type KeyValue } from './storage'
import type { UserAttributes } from './types'

/** A session ends after 30 minutes without user activity, or 24 hours after it began. */
export const SESSION_IDLE_MS = 30 * 60 * 1000
export const SESSION_MAX_MS = 24 * 60 * 60 * 1000
/** Activity is written back to storage at most this often (it is read by every tab of the origin). */
const ACTIVITY_WRITE_MS = 1000

export interface Session {
  id: string
  start: number
  last: number
}

/** Times either way: a clock set back (a wrong one corrected) would keep a session stored ahead of it alive. */
export const isLive = (session: Session | null, now: number): boolean =>
  !!session && Math.abs(now - session.last) < SESSION_IDLE_MS && Math.abs(now - session.start) < SESSION_MAX_MS

const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/
const KEYS = { user: 'sl_uid', attributes: 'sl_user', session: 'sl_session', window: 'sl_wid', seq: 'sl_seq', shown: 'sl_shown' }

export type Identity = ReturnType<typeof createIdentity>

/**
 * The identifiers of the session model: `endUserId` persistent (localStorage and a cookie, either one
 * restores the other), `sessionId` shared by the origin's tabs and renewed after inactivity or age,
 * `windowId` per tab (sessionStorage).
 * Arguments in a row, not one object of them: the bundle keeps no names for them (about 20 B gzipped).
 */
export function createIdentity(
  local: KeyValue,
  /** Per tab: `windowId` and the replay chunk sequence. */
  tab: KeyValue,
  cookie: KeyValue,
  now: () => number,
  newId: () => string,
  onNewSession: () => void,
) {
  /** The valid id kept under `key` in the first store that has one. */
  const found = (stores: KeyValue[], key: string) => stores.map((store) => store.get(key)).find((value) => value && VALID_ID.test(value))
  /** `id` kept under `key` in every store, the ones that had none or another restored. */
  const keep = (stores: KeyValue[], key: string, id = found(stores, key) ?? newId()) => (stores.forEach((store) => store.set(key, id)), id)
  const userStores = [local, cookie]
  const preexisting = !!found(userStores, KEYS.user)
  let endUserId = keep(userStores, KEYS.user)
  // A duplicated tab (the browser's "Duplicate", a `window.open`) starts with a copy of its opener's
  // sessionStorage, window id and chunk sequence included, and its replay would interleave with the
  // opener's. A page marks its tab while it is shown (`holdTab`, until `pagehide`): one that finds the
  // mark at load is such a copy, and starts a window of its own.
  if (tab.get(KEYS.shown)) {
    tab.remove(KEYS.window)
    tab.remove(KEYS.seq)
  }
  const windowId = keep([tab], KEYS.window)
  const saveSession = (session: Session) => local.set(KEYS.session, json(session))
  const newSession = (at: number, id = newId()) => (saveSession({ id, start: at, last: at }), id)
  const stored = () => readJson<Session>(local, KEYS.session)
  /**
   * The live session, or null when it has expired (nothing renews it but activity). (`session` is a
   * local, a parameter for the bundle's size: callers pass nothing.)
   */
  const current = (session = stored()): string | null => (isLive(session, now()) ? session!.id : null)
  /** The session this tab's events went to last. */
  let seen = current() ?? newSession(now())

  return {
    preexisting,
    windowId,
    /** As kept, so a logout in another tab of the origin is this tab's too. */
    get endUserId() {
      return (endUserId = found([local], KEYS.user) ?? endUserId)
    },
    current,
    /**
     * The session for something happening now: activity keeps it alive, or starts a new one. One new
     * to this tab, whether started here or by another tab of the origin (its activity after the
     * session ended, its logout), is told (`onNewSession`): this tab's replay needs a full snapshot in it.
     */
    sessionId(activity: boolean): string {
      const at = now()
      const session = stored()
      let id = session?.id
      if (!isLive(session, at)) {
        if (!activity && id) return id
        id = newSession(at)
      } else if (activity && at - session!.last >= ACTIVITY_WRITE_MS) saveSession({ ...session!, last: at })
      if (id != seen) {
        seen = id!
        onNewSession()
      }
      return id!
    },
    attributes: (): UserAttributes => readJson<UserAttributes>(local, KEYS.attributes) ?? {},
    setAttributes: (attributes: UserAttributes) => local.set(KEYS.attributes, json(attributes)),
    /** Logout: a new anonymous end user in a new session. */
    reset() {
      endUserId = keep(userStores, KEYS.user, newId())
      local.remove(KEYS.attributes)
      seen = newSession(now())
    },
    /** This page is the one shown in the tab (from load or `pageshow` to `pagehide`). */
    holdTab: () => tab.set(KEYS.shown, '1'),
    releaseTab: () => tab.remove(KEYS.shown),
    /**
     * The next replay chunk number of this tab; it continues across page loads of the tab. (`seq` is
     * a local, a parameter for the bundle's size budget: callers pass nothing.)
     */
    nextSeq(seq = +tab.get(KEYS.seq)! || 0): number {
      tab.set(KEYS.seq, String(seq + 1))
      return seq
    },
  }
}
