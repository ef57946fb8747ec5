import { ApiError } from '../errors'
import type { KeyCache } from '../projects/key-cache'
import type { KeyOwner } from '../projects/store'

export type Caller = KeyOwner

/** The key of `Authorization: Bearer <key>`, if that is what the header holds. */
export const bearerKey = (authorization: string | null | undefined): string | undefined => authorization?.match(/^\s*Bearer\s+(\S+)\s*$/i)?.[1]

/**
 * A key sent as a body or query value, without the spaces around it: HTTP strips them from the
 * header's value, so a key configured with a trailing newline worked in the header while the
 * beacons, heartbeats and session-ends that carry the same key in the body got 401. No key holds
 * a space, so none is changed into another.
 */
const keyText = (value: unknown): string | undefined => (typeof value === 'string' && value.trim()) || undefined

/** The key from `Authorization: Bearer`, else the body's `apiKey`, else the query's `apiKey` (WIRE.md). */
export function extractKey(authorization: string | undefined, body: unknown, queryKey: string | undefined): string | undefined {
  const bearer = bearerKey(authorization)
  if (bearer) return bearer
  const bodyKey = typeof body === 'object' && body !== null ? (body as { apiKey?: unknown }).apiKey : undefined
  return keyText(bodyKey) ?? keyText(queryKey)
}

export async function authenticate(keys: KeyCache, key: string | undefined): Promise<Caller> {
  if (!key) throw new ApiError('missing_api_key', 'send the project key as "Authorization: Bearer <key>" or as "apiKey" in the body')
  const owner = await keys.resolve(key)
  if (!owner) throw new ApiError('invalid_api_key', 'the project key is unknown, revoked or rotated')
  return owner
}
