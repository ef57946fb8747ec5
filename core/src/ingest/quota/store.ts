import { sql } from 'drizzle-orm'
import type { Orm } from '../../db'
import { rowsOf } from '../../db'

/** How many rows a project's monthly count is spread over (see the `usage_counters` table). */
export const USAGE_SHARDS = 16

export interface UsageDelta {
  projectId: string
  month: string
  events: number
}

/** A delta and the counter row it goes to. */
export interface ShardDelta extends UsageDelta {
  shard: number
}

/**
 * Locks every counter row of the project's month and returns their sum. Shard 0 is made first, so
 * that even the first commits of a month find a row to queue on.
 */
export async function lockUsage(tx: Orm, projectId: string, month: string): Promise<number> {
  await tx.execute(sql`insert into usage_counters (project_id, month, shard, events) values (${projectId}, ${month}, 0, 0) on conflict do nothing`)
  const [row] = rowsOf<{ events: string | number }>(
    await tx.execute(sql`
      select coalesce(sum(events), 0) as events from (
        select events from usage_counters where project_id = ${projectId} and month = ${month} for update) as locked`),
  )
  return Number(row.events)
}

/**
 * Adds to one shard of each of several counters in one statement; returns each project's new total
 * (that shard's value plus the others as this statement sees them). Deltas must be sorted by project.
 */
export async function addUsage(tx: Orm, deltas: ShardDelta[]): Promise<UsageDelta[]> {
  if (deltas.length === 0) return []
  const rows = rowsOf<{ project_id: string; month: string; events: string | number }>(
    await tx.execute(sql`
      with added as (
        insert into usage_counters (project_id, month, shard, events)
        select d."projectId", d.month, d.shard, d.events from jsonb_to_recordset(${JSON.stringify(deltas)}::jsonb) as d("projectId" uuid, month date, shard smallint, events bigint)
        on conflict (project_id, month, shard) do update set events = usage_counters.events + excluded.events
        returning project_id, month, shard, events)
      select a.project_id, a.month::text as month,
        a.events + coalesce((select sum(u.events) from usage_counters u
                             where u.project_id = a.project_id and u.month = a.month and u.shard <> a.shard), 0) as events
      from added a`),
  )
  return rows.map((r) => ({ projectId: r.project_id, month: r.month, events: Number(r.events) }))
}
