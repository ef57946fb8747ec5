import { Elysia } from 'elysia'
import { authenticate, bearerKey, extractKey, type Caller } from '../http/auth'
import type { KeyCache } from '../projects/key-cache'
import type { Quota } from './quota'

export interface IngestionDeps {
  keys: KeyCache
  quota: Quota
}

/**
 * What every ingestion route shares, before its body is validated: the key resolves to `caller`, a
 * project known to be over its monthly limit is refused at once, and `reply` builds the success
 * answer with `monthlyLimitReached` once the limit is reached.
 */
export function ingestion({ keys, quota }: IngestionDeps) {
  return new Elysia().derive({ as: 'scoped' }, async ({ headers, body, query }) => {
    const caller: Caller = await authenticate(keys, extractKey(headers.authorization, body, query.apiKey))
    quota.assertUnderLimit(caller.projectId, caller.monthlyLimit)
    return {
      caller,
      reply: <T extends object>(fields: T) =>
        quota.reached(caller.projectId, caller.monthlyLimit) ? { success: true as const, ...fields, monthlyLimitReached: true as const } : { success: true as const, ...fields },
    }
  })
}

export type IngestionPlugin = ReturnType<typeof ingestion>

/**
 * The checks of `ingestion` for a key sent in the header, which wins over one in the body, made
 * before a large body is read: a caller that will be refused (unknown key, project over its limit)
 * is refused without its body taking a turn of the work every caller shares. A key in the body
 * (beacons) can only be checked once the body is read.
 */
export function headerKeyCheck({ keys, quota }: IngestionDeps) {
  return async (request: Request): Promise<void> => {
    const key = bearerKey(request.headers.get('authorization'))
    if (!key) return
    const caller = await authenticate(keys, key)
    quota.assertUnderLimit(caller.projectId, caller.monthlyLimit)
  }
}
