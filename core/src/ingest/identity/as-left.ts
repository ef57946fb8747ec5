import { type SQL, sql } from 'drizzle-orm'
import { firstSeenOf, type EndUserTouch } from '../sessions/service'
import { jsonParam } from '../shared/values'

/**
 * Per end user of the project among `pending`: the attributes merged in order (from the last touch
 * that replaces them, then `replacesAttributes`: the stored ones are no part of them), and the first
 * and last activity (null without any: a touch without activity has only its receipt, which moves no
 * time of a row that exists), as the end-user sink will write them. A touch's first activity is its
 * `firstAt` when it has one (a person left behind brings its first-seen time), else its `at`.
 */
export function mergedPending(projectId: string, pending: readonly EndUserTouch[]) {
  const merged = new Map<
    string,
    { endUserId: string; attributes: Record<string, unknown>; firstAt: number | null; lastAt: number | null; replacesAttributes?: boolean }
  >()
  for (const touch of pending) {
    if (touch.projectId !== projectId) continue
    const seen = merged.get(touch.endUserId)
    const active = !touch.noActivity
    merged.set(touch.endUserId, {
      endUserId: touch.endUserId,
      attributes: touch.replacesAttributes ? { ...touch.attributes } : { ...seen?.attributes, ...touch.attributes },
      firstAt: active ? Math.min(seen?.firstAt ?? Infinity, firstSeenOf(touch)) : (seen?.firstAt ?? null),
      lastAt: active ? Math.max(seen?.lastAt ?? -Infinity, touch.at) : (seen?.lastAt ?? null),
      replacesAttributes: seen?.replacesAttributes || touch.replacesAttributes || undefined,
    })
  }
  return [...merged.values()]
}

/** The attributes of `endUserId` as the commit leaves them (see personLookup): a jsonb value. */
export function attributesAsLeft(projectId: string, endUserId: string, pending: readonly EndUserTouch[]): SQL {
  const written = mergedPending(projectId, pending).find((p) => p.endUserId === endUserId)
  const stored = written?.replacesAttributes
    ? sql`'{}'::jsonb`
    : sql`coalesce((select attributes from end_users where project_id = ${projectId} and end_user_id = ${endUserId}), '{}'::jsonb)`
  return sql`(${stored} || ${jsonParam(written?.attributes ?? {})}::jsonb)`
}
