import type { Database, Unlisten } from '../db'
import type { Logger } from '../log'
import { hashKey, isWellFormedKey } from './keys'
import { KEYS_CHANNEL } from './service'
import { findLiveKey, type KeyOwner } from './store'

export interface KeyCacheOptions {
  /** How long a resolved key is trusted without a notification (a safety net; NOTIFY is the mechanism). */
  ttlMs?: number
  /** Unknown keys are remembered briefly so that a flood of bad keys does not reach the database. */
  negativeTtlMs?: number
  maxEntries?: number
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

interface Entry {
  owner: KeyOwner | null
  expiresAt: number
}

export function createKeyCache(db: Database, log: Logger, options: KeyCacheOptions = {}): KeyCache {
  const { ttlMs = 60_000, negativeTtlMs = 5_000, maxEntries = 10_000, now = Date.now } = options
  const entries = new Map<string, Entry>()
  const lookups = new Map<string, Promise<KeyOwner | null>>()
  // Bumped on every invalidation, so a lookup that raced with one is not cached afterwards.
  let generation = 0
  let unlisten: Unlisten | undefined

  const clear = () => {
    generation++
    entries.clear()
    lookups.clear()
  }

  const remember = (keyHash: string, owner: KeyOwner | null) => {
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!)
    entries.set(keyHash, { owner, expiresAt: now() + (owner ? ttlMs : negativeTtlMs) })
  }

  const lookUp = (keyHash: string): Promise<KeyOwner | null> => {
    const pending = lookups.get(keyHash)
    if (pending) return pending
    const startedIn = generation
    const lookup = findLiveKey(db.orm, keyHash)
      .then((owner) => {
        if (generation === startedIn) remember(keyHash, owner ?? null)
        return owner ?? null
      })
      .finally(() => {
        if (lookups.get(keyHash) === lookup) lookups.delete(keyHash)
      })
    lookups.set(keyHash, lookup)
    return lookup
  }

  return {
    async resolve(key) {
      if (!isWellFormedKey(key)) return null
      const keyHash = hashKey(key)
      const cached = entries.get(keyHash)
      if (cached && cached.expiresAt > now()) return cached.owner
      return lookUp(keyHash)
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
    },
    async stop() {
      const stopListening = unlisten
      unlisten = undefined
      // A database that is already gone has nothing left to stop listening to.
      await stopListening?.().catch(() => {})
    },
    clear,
  }
}
