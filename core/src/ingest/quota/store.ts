import { sql } from 'drizzle-orm'
import type { Orm } from '../../db'
import { rowsOf } from '../../db'

export interface UsageDelta {
  projectId: string
  month: string
  events: number
}

/** Locks the project's counter for the month (creating it at 0) and returns its value, in one statement. */
export async function lockUsage(tx: Orm, projectId: string, month: string): Promise<number> {
  // A no-op update takes the row lock and returns the row, whether it was just made or not.
  const [row] = rowsOf<{ events: string | number }>(
    await tx.execute(sql`
      insert into usage_counters (project_id, month, events) values (${projectId}, ${month}, 0)
      on conflict (project_id, month) do update set events = usage_counters.events
      returning events`),
  )
  return Number(row.events)
}

/** Adds to several counters in one statement; returns the new totals. Deltas must be sorted by project. */
export async function addUsage(tx: Orm, deltas: UsageDelta[]): Promise<UsageDelta[]> {
  if (deltas.length === 0) return []
  const rows = rowsOf<{ project_id: string; month: string; events: string | number }>(
    await tx.execute(sql`
      insert into usage_counters (project_id, month, events)
      select d."projectId", d.month, d.events from json_to_recordset(${JSON.stringify(deltas)}::json) as d("projectId" uuid, month date, events bigint)
      on conflict (project_id, month) do update set events = usage_counters.events + excluded.events
      returning project_id, month::text as month, events`),
  )
  return rows.map((r) => ({ projectId: r.project_id, month: r.month, events: Number(r.events) }))
}
