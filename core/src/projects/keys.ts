import { createHash, randomBytes } from 'node:crypto'

export const DEFAULT_ENVIRONMENTS = ['production', 'development'] as const
/** What is stored and shown of a key besides its hash, e.g. `sl_live_Ab3dEf9h`. */
export const KEY_PREFIX_LENGTH = 16
const ENVIRONMENT_NAME = /^[a-z][a-z0-9_-]{0,31}$/
const KEY_SHAPE = /^sl_[a-z]+_[A-Za-z0-9_-]{32}$/

/** A new random key: 24 bytes of entropy, tagged with its environment for humans (`sl_live_…`). */
export function generateKey(environment: string): string {
  const tag = environment === 'production' ? 'live' : environment === 'development' ? 'dev' : 'env'
  return `sl_${tag}_${randomBytes(24).toString('base64url')}`
}

/**
 * Keys carry 192 random bits, so a fast hash is enough to make the stored value useless to a
 * reader of the database; lookups go by hash, so no key is ever compared character by character.
 */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

export const keyPrefix = (key: string): string => key.slice(0, KEY_PREFIX_LENGTH)

/** Cheap rejection of anything that cannot be a key, before hashing or touching the cache. */
export const isWellFormedKey = (candidate: string): boolean => KEY_SHAPE.test(candidate)

export const isValidEnvironmentName = (name: string): boolean => ENVIRONMENT_NAME.test(name)
