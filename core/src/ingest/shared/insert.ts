import { sql, type SQL } from 'drizzle-orm'
import { affectedRowsOf, rowsOf, type Orm } from '../../db'
import type { AlreadyStored } from '../../sink'

/**
 * Runs a counted sink's `insert ... on conflict do nothing` and says, per project, how many of `rows`
 * it skipped because they were stored already (resends), so the monthly quota counts them once.
 */
export async function insertCounted(tx: Orm, rows: readonly { projectId: string }[], insert: SQL): Promise<AlreadyStored> {
  const [first] = rows
  // Nearly every commit holds one project's rows: the statement's own row count says how many it
  // stored, without returning and grouping them (a tenth of an 18-row insert on the embedded database).
  if (first && rows.every((row) => row.projectId === first.projectId)) {
    return alreadyStoredOf(rows, [{ projectId: first.projectId, n: affectedRowsOf(await tx.execute(insert)) }])
  }
  return alreadyStoredOf(rows, await insertedPerProject(tx, insert))
}

/** Runs an `insert ... on conflict do nothing` and counts, per project, the rows it stored. */
export async function insertedPerProject(tx: Orm, insert: SQL): Promise<{ projectId: string; n: number }[]> {
  return rowsOf<{ projectId: string; n: number }>(
    await tx.execute(sql`
      with stored as (${insert} returning project_id)
      select project_id::text as "projectId", count(*)::int as n from stored group by project_id`),
  )
}

/** Per project, the rows given that are not among those stored now. */
export function alreadyStoredOf(rows: readonly { projectId: string }[], stored: readonly { projectId: string; n: number }[]): AlreadyStored {
  const missing: AlreadyStored = new Map()
  for (const { projectId } of rows) missing.set(projectId, (missing.get(projectId) ?? 0) + 1)
  for (const { projectId, n } of stored) missing.set(projectId, (missing.get(projectId) ?? 0) - Number(n))
  for (const [projectId, n] of missing) if (n <= 0) missing.delete(projectId)
  return missing
}

/**
 * Rows per statement for sinks that bind each row's values as parameters (binary data, bound as
 * bytea): a statement takes at most 65,535 parameters, and 2,000 rows of a dozen values stay below.
 */
const ROWS_PER_STATEMENT = 2_000

/** The rows in runs of at most `perStatement`, in order: one statement each. */
export function inStatements<T>(rows: readonly T[], perStatement = ROWS_PER_STATEMENT): T[][] {
  const runs: T[][] = []
  for (let i = 0; i < rows.length; i += perStatement) runs.push(rows.slice(i, i + perStatement))
  return runs
}
