import type { Geo } from '../geo/service'
import { storedText } from '../shared/values'

/**
 * What one request tells about its session. Sessions are created by the first request that names
 * them and every later one extends them; fields other than the times are set when first known.
 */
export interface SessionTouch {
  projectId: string
  sessionId: string
  environment: string
  endUserId: string | null
  /** Earliest and latest activity this request shows, epoch ms. */
  firstAt: number
  lastAt: number
  /**
   * The request shows no activity (a replay chunk without a valid event, resent hours later from an
   * outbox): `firstAt` and `lastAt` are only its receipt time, which a session it creates starts at,
   * marked as a stand-in (`times_are_receipt`) that the first touch with activity replaces rather
   * than widens; an existing session's times (and end) are kept.
   */
  noActivity?: boolean
  entryUrl?: string | null
  /** When the page of `entryUrl` was loaded, epoch ms (its meta event); the earliest entry wins. */
  entryAt?: number | null
  /** The referrer of the page of `entryUrl` when there is one, else of the request's page. */
  referrer?: string | null
  userAgent?: string | null
  browser?: string | null
  browserVersion?: string | null
  os?: string | null
  osVersion?: string | null
  deviceType?: string | null
  deviceVendor?: string | null
  deviceModel?: string | null
  automaticProperties?: Record<string, unknown> | null
  /**
   * The client time `automaticProperties` and `sdkVersion` are of (a replay chunk's last event), epoch
   * ms; absent when unknown (a chunk without a valid event, /init). A session keeps the values of
   * the newest: an old chunk resent after newer ones only fills names the session lacks. Undated
   * values count as the oldest.
   */
  propertiesAt?: number
  windowIds?: string[]
  geo?: Geo | null
  sdkVersion?: string | null
}

export interface EndUserTouch {
  projectId: string
  endUserId: string
  /** Latest activity this touch shows, epoch ms. */
  at: number
  /** Earliest activity, when the request shows more than one moment (a batch, a replay chunk); else `at`. */
  firstAt?: number
  /** As SessionTouch's: `at` is only the receipt time, for an end user it creates; an existing one's times are kept. */
  noActivity?: boolean
  /** Merged into what is stored (identify). */
  attributes?: Record<string, unknown> | null
  /**
   * `attributes` (none: `{}`) take the place of what is stored, rather than merging into it: an end user
   * that becomes an alias, or leaves its person, keeps nothing of whom it was (identitySink).
   */
  replacesAttributes?: boolean
  geo?: Geo | null
}

/** A session and an end user are known by their project and id: keys for the maps that merge and cache them. */
export const sessionKey = (t: { projectId: string; sessionId: string }) => `${t.projectId}\n${t.sessionId}`
export const endUserKey = (t: { projectId: string; endUserId: string }) => `${t.projectId}\n${t.endUserId}`

/** When an end user touch first saw them: what `first_seen_at` takes for a new end user. */
export const firstSeenOf = (touch: EndUserTouch): number => touch.firstAt ?? touch.at

/**
 * One touch per session, so a multi-row upsert never meets the same row twice; sorted, so that
 * concurrent commits lock rows in one order. The earliest entry (with its referrer) wins; without
 * one, the earliest touch's referrer.
 */
export function mergeSessionTouches(touches: readonly SessionTouch[]): SessionTouch[] {
  const merged = new Map<string, SessionTouch>()
  for (const given of touches) {
    // Copied only when it has properties to clean: most touches (events, logs) have none.
    const touch = given.automaticProperties ? { ...given, automaticProperties: knownMembers(given.automaticProperties) } : given
    const key = sessionKey(touch)
    const seen = merged.get(key)
    if (!seen) {
      merged.set(key, { ...touch, windowIds: touch.windowIds ? firstWindows(touch.windowIds) : undefined })
      continue
    }
    const [early, late] = touch.firstAt < seen.firstAt ? [touch, seen] : [seen, touch]
    merged.set(key, {
      ...late,
      ...definedOnly(early),
      ...userAgentOf(early.userAgent ? early : late),
      ...earliestEntry(seen, touch),
      ...activityOf(seen, touch),
      endUserId: seen.endUserId ?? touch.endUserId,
      windowIds: firstWindows(seen.windowIds, touch.windowIds),
      geo: touch.geo ?? seen.geo,
      ...newestProperties(seen, touch),
    })
  }
  return [...merged.values()].sort((a, b) => (sessionKey(a) < sessionKey(b) ? -1 : 1))
}

export function mergeEndUserTouches(touches: readonly EndUserTouch[]): EndUserTouch[] {
  const merged = new Map<string, EndUserTouch>()
  for (const touch of touches) {
    const key = endUserKey(touch)
    const seen = merged.get(key)
    merged.set(
      key,
      seen
        ? {
            ...seen,
            ...endUserActivityOf(seen, touch),
            // A touch that replaces drops what the touches before it gave too: they came earlier.
            attributes: touch.replacesAttributes ? { ...touch.attributes } : seen.attributes || touch.attributes ? { ...seen.attributes, ...touch.attributes } : null,
            replacesAttributes: seen.replacesAttributes || touch.replacesAttributes || undefined,
            geo: touch.geo ?? seen.geo,
          }
        : touch,
    )
  }
  return [...merged.values()].sort((a, b) => (endUserKey(a) < endUserKey(b) ? -1 : 1))
}

/**
 * The times of the touches that show activity: a touch that shows none (`noActivity`) has only its
 * receipt time, which must not stretch the others'. Touches that all show none keep their receipt.
 */
function activityOf(a: SessionTouch, b: SessionTouch): Pick<SessionTouch, 'firstAt' | 'lastAt' | 'noActivity'> {
  if (a.noActivity && !b.noActivity) return { firstAt: b.firstAt, lastAt: b.lastAt, noActivity: undefined }
  if (b.noActivity && !a.noActivity) return { firstAt: a.firstAt, lastAt: a.lastAt, noActivity: undefined }
  return { firstAt: Math.min(a.firstAt, b.firstAt), lastAt: Math.max(a.lastAt, b.lastAt), noActivity: a.noActivity }
}

function endUserActivityOf(a: EndUserTouch, b: EndUserTouch): Pick<EndUserTouch, 'firstAt' | 'at' | 'noActivity'> {
  if (a.noActivity && !b.noActivity) return { firstAt: firstSeenOf(b), at: b.at, noActivity: undefined }
  if (b.noActivity && !a.noActivity) return { firstAt: firstSeenOf(a), at: a.at, noActivity: undefined }
  return { firstAt: Math.min(firstSeenOf(a), firstSeenOf(b)), at: Math.max(a.at, b.at), noActivity: a.noActivity }
}

/**
 * `automaticProperties` without its null members: old trackers send null for what they do not know,
 * which must never erase what the session has (properties merge, the latest value winning), nor be
 * stored. Null when nothing is left. Names are taken as stored (see storedNames); nested values are
 * kept as they came.
 */
export function knownMembers(given: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (!given) return null
  const properties = storedNames(given)
  const values = Object.values(properties)
  if (values.every((value) => !nothing(value))) return values.length === 0 ? null : properties
  const known = Object.entries(properties).filter(([, value]) => !nothing(value))
  return known.length === 0 ? null : Object.fromEntries(known)
}

/** A name that the database stores otherwise (see storedText): NUL, or a surrogate that may be lone. */
const STORED_OTHERWISE = /[\u0000\ud800-\udfff]/

/**
 * Properties (automaticProperties, identify's attributes) under their names as the database will hold
 * them (see storedText: without NUL, a lone surrogate as U+FFFD), the later of two names stored as one
 * winning, as jsonb keeps the last. Touches of one row in a commit are merged in memory first: under
 * the names as sent, `plan` and `plan\0` (or a name cut inside an emoji and that name with U+FFFD)
 * stay two members, and the database keeps whichever comes last in the merged object, not the one
 * sent last.
 */
export function storedNames(properties: Record<string, unknown>): Record<string, unknown> {
  const names = Object.keys(properties)
  if (!names.some((name) => STORED_OTHERWISE.test(name))) return properties
  return Object.fromEntries(names.map((name) => [storedText(name), properties[name]]))
}

/**
 * The entry URL, its time and its page's referrer of whichever touch has the earlier entry, or of the
 * only one with an entry: its referrer, not that of an earlier touch without one, as the sessions
 * sink decides when the two come in two commits.
 */
function earliestEntry(a: SessionTouch, b: SessionTouch): Pick<SessionTouch, 'entryUrl' | 'entryAt' | 'referrer'> | undefined {
  if (!a.entryUrl && !b.entryUrl) return undefined // the spread of the earlier touch decided
  const first = !b.entryUrl ? a : !a.entryUrl ? b : (b.entryAt ?? b.firstAt) < (a.entryAt ?? a.firstAt) ? b : a
  return { entryUrl: first.entryUrl, entryAt: first.entryAt, referrer: first.referrer }
}

/**
 * The properties and SDK version of two touches of a session, the newer's (by `propertiesAt`, the
 * client's time, not the order they came in) winning name by name, as the sessions sink takes them
 * across commits: a commit's grouping of requests must not change the answer.
 */
function newestProperties(a: SessionTouch, b: SessionTouch): Pick<SessionTouch, 'automaticProperties' | 'sdkVersion' | 'propertiesAt'> {
  const [old, young] = (b.propertiesAt ?? -Infinity) >= (a.propertiesAt ?? -Infinity) ? [a, b] : [b, a]
  const dated = [a.propertiesAt, b.propertiesAt].filter((at) => at !== undefined)
  return {
    automaticProperties: old.automaticProperties || young.automaticProperties ? { ...old.automaticProperties, ...young.automaticProperties } : null,
    sdkVersion: young.sdkVersion ?? old.sdkVersion,
    propertiesAt: dated.length === 0 ? undefined : Math.max(...dated),
  }
}

type UserAgentFields = Pick<SessionTouch, 'userAgent' | 'browser' | 'browserVersion' | 'os' | 'osVersion' | 'deviceType' | 'deviceVendor' | 'deviceModel'>

/**
 * The user agent of one touch with all it was parsed into, absent parts included: taken field by
 * field, two user agents of a session (a phone asking for the desktop site on one page only) would
 * make a device of neither, a Linux desktop with a Samsung phone's model. The sessions sink keeps
 * them together likewise (USER_AGENT_UNKNOWN).
 */
function userAgentOf(touch: SessionTouch): UserAgentFields {
  const { userAgent, browser, browserVersion, os, osVersion, deviceType, deviceVendor, deviceModel } = touch
  return { userAgent, browser, browserVersion, os, osVersion, deviceType, deviceVendor, deviceModel }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>
}

/**
 * Last activity is kept to this resolution: a touch that would only move it by less, and tells
 * nothing else new, is not written again. A busy session then costs one row update a second rather
 * than one per commit, and concurrent commits stop queueing on its row lock.
 */
export const ACTIVITY_RESOLUTION_MS = 1_000

/**
 * A session keeps this many of the window ids it is named with, the first it gets: a real one has a
 * handful (a tab each), but window ids are the client's to make, and without a bound one public key
 * could grow a session's row (rewritten whole by each touch) and this process's cache of it for ever.
 */
export const MAX_WINDOWS_PER_SESSION = 100

/**
 * The window ids of `lists` in the order first seen, each once, up to MAX_WINDOWS_PER_SESSION: what
 * a session keeps of them. The sessions sink stores them likewise, appending to a stored array what
 * is new to it, so that a row's array is in the order its windows came, however many touches made it.
 */
export function firstWindows(...lists: (Iterable<string> | undefined)[]): string[] {
  const kept = new Set<string>()
  for (const list of lists) {
    for (const windowId of list ?? []) {
      if (kept.size === MAX_WINDOWS_PER_SESSION) return [...kept]
      kept.add(windowId)
    }
  }
  return [...kept]
}

/**
 * What this process has committed of a session or end user; the stored row holds at least this.
 * Window ids excepted: one that came when the row already had all it keeps (another process filled
 * it) is known here though not stored, which is no matter: a full row takes no new window anyway.
 */
export interface KnownRow {
  firstAt: number
  lastAt: number
  endUserId: string | null
  windowIds: ReadonlySet<string>
}

const nothing = (value: unknown) => value === undefined || value === null

/** True when writing the touch would change nothing but last activity, by less than the resolution. */
export function sessionTouchIsKnown(touch: SessionTouch, known: KnownRow | undefined): boolean {
  if (!known) return false
  if (!touch.noActivity && (touch.firstAt < known.firstAt || touch.lastAt > known.lastAt + ACTIVITY_RESOLUTION_MS)) return false
  if (touch.endUserId !== null && known.endUserId === null) return false
  // A session with all the windows it keeps takes no more: naming a new one is nothing new.
  if (known.windowIds.size < MAX_WINDOWS_PER_SESSION && touch.windowIds?.some((w) => !known.windowIds.has(w))) return false
  return (
    nothing(touch.entryUrl) && nothing(touch.referrer) && nothing(touch.userAgent) && nothing(touch.automaticProperties) && nothing(touch.geo) && nothing(touch.sdkVersion)
  )
}

export function endUserTouchIsKnown(touch: EndUserTouch, known: KnownRow | undefined): boolean {
  if (!known) return false
  if (!touch.noActivity && (firstSeenOf(touch) < known.firstAt || touch.at > known.lastAt + ACTIVITY_RESOLUTION_MS)) return false
  return nothing(touch.geo) && !touch.replacesAttributes && (nothing(touch.attributes) || Object.keys(touch.attributes!).length === 0)
}

/**
 * What is known after a committed write of `touch` on top of `known`. A touch without activity
 * teaches no times: it kept an existing row's, and may have raced another request creating the row.
 */
export function knownAfter(
  known: KnownRow | undefined,
  touch: { firstAt: number; lastAt: number; noActivity?: boolean; endUserId?: string | null; windowIds?: readonly string[] },
): KnownRow {
  const times = touch.noActivity ? { firstAt: Infinity, lastAt: -Infinity } : touch
  return {
    firstAt: Math.min(known?.firstAt ?? Infinity, times.firstAt),
    lastAt: Math.max(known?.lastAt ?? -Infinity, times.lastAt),
    endUserId: known?.endUserId ?? touch.endUserId ?? null,
    windowIds: touch.windowIds?.length ? new Set(firstWindows(known?.windowIds, touch.windowIds)) : (known?.windowIds ?? new Set()),
  }
}
