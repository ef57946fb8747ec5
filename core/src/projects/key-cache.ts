import { randomUUID } from 'node:crypto'
import { answerWithin, errorText, READ_TIMEOUT_MS, type Database, type Unlisten } from '../db'
import { ApiError } from '../errors'
import type { Logger } from '../log'
import { hashKey, isWellFormedKey } from './keys'
import { KEYS_CHANNEL } from './service'
import { findLiveKey, type KeyOwner } from './store'

export interface KeyCacheOptions {
  /** How long a resolved key is trusted without a notification (a safety net; NOTIFY is the mechanism). */
  ttlMs?: number
  /** Unknown keys are remembered briefly so that a flood of bad keys does not reach the database. */
  negativeTtlMs?: number
  /** Of known keys, and apart of unknown ones. */
  maxEntries?: number
  /** How often the listening connection is checked, by a notification this cache sends itself (Postgres). */
  heartbeatMs?: number
  /** How long heartbeats the database took go unheard before the listening connection is made again (RELISTEN_AFTER_MS). */
  relistenAfterMs?: number
  /**
   * Milliseconds on a clock that only goes forward (the default: `performance.now`). Everything timed
   * here is a duration: on the wall clock, one set back an hour (NTP, a resumed virtual machine) kept
   * cached keys and a listening connection gone deaf trusted for that hour, revocations unseen.
   */
  now?: () => number
}

export interface KeyCache {
  /** The owner of a live key, or null for an unknown, revoked or malformed one. */
  resolve(key: string): Promise<KeyOwner | null>
  /** Starts listening for key changes made by any process sharing the database. */
  start(): Promise<void>
  stop(): Promise<void>
  clear(): void
}

/** How long a stop waits for the database to confirm it stopped listening. */
const UNLISTEN_TIMEOUT_MS = 1_000

/**
 * How long the database may take this cache's heartbeats without one being heard before the
 * listening connection is closed and made again. One that died silently stays open for as long as
 * TCP keeps it, minutes to hours, and meanwhile every request looks its key up (see `deaf`). Heard
 * heartbeats come back within milliseconds: ten seconds of them taken by the database and lost is a
 * dead connection, not a slow one, while a busy pool that delays a few costs no needless reconnection.
 * Counted only from heartbeats the database took: while it is out of reach, postgres.js connects
 * again on its own once the connection closes, and closing it more would only add connections.
 */
const RELISTEN_AFTER_MS = 10_000
/**
 * A connection made again that is deaf too waits twice as long as the one before it, up to this: a
 * path that keeps losing notifications is not reconnected every ten seconds for ever.
 */
const MAX_RELISTEN_AFTER_MS = 5 * 60_000

/** Where each cache checks that it still hears notifications: apart, so that no cache drops its keys for another's check. */
export const KEYS_HEARTBEAT_CHANNEL = 'sightline_keys_heartbeat'

interface Entry {
  owner: KeyOwner | null
  expiresAt: number
}

export function createKeyCache(db: Database, log: Logger, options: KeyCacheOptions = {}): KeyCache {
  const { ttlMs = 60_000, negativeTtlMs = 5_000, maxEntries = 10_000, heartbeatMs = 1_000, relistenAfterMs = RELISTEN_AFTER_MS, now = () => performance.now() } = options
  // Known keys apart from unknown ones: a flood of made-up keys fills only its own map, and pushes no
  // live key out of the cache (each pushed out would cost a lookup on its next request).
  const known = new Map<string, Entry>()
  const unknown = new Map<string, Entry>()
  const lookups = new Map<string, Promise<KeyOwner | null>>()
  // Bumped on every invalidation, so a lookup that raced with one is not cached afterwards.
  let generation = 0
  let unlisten: Unlisten | undefined
  let unlistenHeartbeat: Unlisten | undefined
  let heartbeat: ReturnType<typeof setInterval> | undefined
  // A listening connection that died silently (a NAT or firewall that dropped it, a partition) is not
  // closed for as long as TCP keeps it, and every revocation meanwhile went unheard: cached keys are
  // trusted only while this cache hears its own heartbeats, and the connection is made again once the
  // database took some unheard (see RELISTEN_AFTER_MS). Postgres only: PGlite notifies in process.
  const heartbeatId = randomUUID()
  let lastHeard = Number.POSITIVE_INFINITY
  const deaf = () => now() - lastHeard > 3 * heartbeatMs
  // Heartbeats are numbered, so that one the database took can be told from one already heard.
  let heartbeatsSent = 0
  let heardUpTo = 0
  /** Since when a heartbeat the database took has not been heard. */
  let unheardSince: number | undefined
  let relistenAfter = relistenAfterMs

  const beat = () => {
    if (unheardSince !== undefined && now() - unheardSince > relistenAfter) {
      log.warn('the connection listening for key changes hears nothing; connecting it again', { deafForMs: now() - unheardSince })
      unheardSince = undefined
      relistenAfter = Math.min(2 * relistenAfter, MAX_RELISTEN_AFTER_MS)
      db.reconnectListening?.()
    }
    const sent = ++heartbeatsSent
    db.notify(KEYS_HEARTBEAT_CHANNEL, `${heartbeatId} ${sent}`).then(
      () => {
        if (heardUpTo < sent) unheardSince ??= now()
      },
      () => {},
    )
  }

  const clear = () => {
    generation++
    known.clear()
    unknown.clear()
    lookups.clear()
  }

  const remember = (key: string, owner: KeyOwner | null) => {
    // Out of both first: a key revoked leaves the known ones, and one refreshed goes to the end, the last to be pushed out.
    known.delete(key)
    unknown.delete(key)
    const entries = owner ? known : unknown
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!)
    entries.set(key, { owner, expiresAt: now() + (owner ? ttlMs : negativeTtlMs) })
  }

  const lookUp = (key: string): Promise<KeyOwner | null> => {
    const pending = lookups.get(key)
    if (pending) return pending
    const startedIn = generation
    // Bounded: a database that stopped answering would leave the request waiting for ever.
    const lookup = answerWithin(findLiveKey(db.orm, hashKey(key)), READ_TIMEOUT_MS, `no answer within ${READ_TIMEOUT_MS} ms`)
      .then(
        (owner) => {
          if (generation === startedIn) remember(key, owner ?? null)
          return owner ?? null
        },
        // The database is out of reach (its connections are cut right after a restart clears this
        // cache): the request is refused as any write would be then, for a retry, not as a fault.
        (error: unknown) => {
          log.warn('key lookup failed', { error: errorText(error) })
          throw new ApiError('storage_unavailable', 'the project key cannot be checked: storage is unavailable; retry later', { retryAfterSeconds: 2 })
        },
      )
      .finally(() => {
        if (lookups.get(key) === lookup) lookups.delete(key)
      })
    lookups.set(key, lookup)
    return lookup
  }

  return {
    async resolve(key) {
      if (!isWellFormedKey(key)) return null
      // Cached by the key itself, which every request carries in memory anyway: hashing is for the
      // database, and sparing it on a cache hit spares a SHA-256 per request.
      const cached = known.get(key) ?? unknown.get(key)
      if (cached && cached.expiresAt > now() && !deaf()) return cached.owner
      return lookUp(key)
    },
    async start() {
      unlisten = await db.listen(
        KEYS_CHANNEL,
        () => clear(),
        () => {
          // (Re)connected: notifications may have been missed meanwhile.
          clear()
          log.debug('listening for key changes')
        },
      )
      if (db.kind !== 'postgres') return
      lastHeard = now()
      unlistenHeartbeat = await db.listen(KEYS_HEARTBEAT_CHANNEL, (payload) => {
        const [id, number] = payload.split(' ')
        if (id !== heartbeatId) return
        // Heard again after a silence: what was notified meanwhile may be lost.
        if (deaf()) clear()
        lastHeard = now()
        heardUpTo = Math.max(heardUpTo, Number(number) || 0)
        unheardSince = undefined
        relistenAfter = relistenAfterMs
      })
      heartbeat = setInterval(beat, heartbeatMs)
      heartbeat.unref?.()
    },
    async stop() {
      clearInterval(heartbeat)
      const stopListening = [unlisten, unlistenHeartbeat]
      unlisten = unlistenHeartbeat = undefined
      // A database that is already gone has nothing left to stop listening to, and one that stopped
      // answering would never confirm it: closing the database ends the listening connection anyway.
      await Promise.race([Promise.all(stopListening.map((stop) => stop?.().catch(() => {}))), Bun.sleep(UNLISTEN_TIMEOUT_MS)])
    },
    clear,
  }
}
