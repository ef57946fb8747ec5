import { ApiError } from '../errors'
import type { KeyCache } from '../projects/key-cache'
import type { KeyOwner } from '../projects/store'

export type Caller = KeyOwner

/** The key of `Authorization: Bearer <key>`, if that is what the header holds. */
export const bearerKey = (authorization: string | null | undefined): string | undefined => authorization?.match(/^\s*Bearer\s+(\S+)\s*$/i)?.[1]

/** The key from `Authorization: Bearer`, else the body's `apiKey`, else the query's `apiKey` (WIRE.md). */
export function extractKey(authorization: string | undefined, body: unknown, queryKey: string | undefined): string | undefined {
  const bearer = bearerKey(authorization)
  if (bearer) return bearer
  const bodyKey = typeof body === 'object' && body !== null ? (body as { apiKey?: unknown }).apiKey : undefined
  if (typeof bodyKey === 'string' && bodyKey !== '') return bodyKey
  return queryKey || undefined
}

export async function authenticate(keys: KeyCache, key: string | undefined): Promise<Caller> {
  if (!key) throw new ApiError('missing_api_key', 'send the project key as "Authorization: Bearer <key>" or as "apiKey" in the body')
  const owner = await keys.resolve(key)
  if (!owner) throw new ApiError('invalid_api_key', 'the project key is unknown, revoked or rotated')
  return owner
}
