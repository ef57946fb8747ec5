import { Elysia } from 'elysia'
import { authenticate, extractKey, type Caller } from '../http/auth'
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
