import { type SQL, sql } from 'drizzle-orm'
import type { Orm } from '../../db'
import { rowsOf } from '../../db'
import type { AlreadyStored } from '../../sink'
import { boundedMerge, END_USER_ATTRIBUTES } from '../sessions/bounded-merge'
import type { EndUserTouch } from '../sessions/service'
import { jsonParam } from '../shared/values'
import { attributesAsLeft, mergedPending } from './as-left'
import type { IdentifyRow } from './service'

/**
 * Whether an identify that left `person` as it was (no alias made or undone) repeats what is stored:
 * the person exists, and merging the attributes sent into its own, as the commit leaves them so far
 * (`pending`, taken now: an identify and its resend in one commit count once), changes nothing, as
 * the end-user sink merges them (boundedMerge): at the bound, a new name is dropped and changes
 * nothing either. Such an identify (a resend from the tracker's outbox or the relay, which carries no
 * id to know it by, or a page that identifies the same user again) stores nothing, and counts nothing
 * against the monthly limit. A row of `(project, known, attributes as left, attributes sent)`, for
 * repeatsOf.
 */
export function repeatsWhatIsStored(row: IdentifyRow, person: string, pending: readonly EndUserTouch[]): SQL {
  const written = mergedPending(row.projectId, pending).some((p) => p.endUserId === person)
  return sql`(${row.projectId}::uuid,
    ${written}::boolean or exists (select 1 from end_users where project_id = ${row.projectId} and end_user_id = ${person}),
    ${attributesAsLeft(row.projectId, person, pending)},
    ${jsonParam(row.attributes)}::jsonb)`
}

/**
 * Per project, how many identifies repeat what is stored: one statement for the commit, where one per
 * identify would cost a round trip each inside the transaction. Every check reads the rows as they
 * were before the commit (end users are written in a later phase), with what it writes so far.
 * Materialized: boundedMerge repeats its arguments, and the attributes as left are a lookup (and a
 * copy of up to the bound's size) that Postgres would otherwise inline into each use (a one-row
 * VALUES is pulled up into the query that reads it).
 */
export async function repeatsOf(tx: Orm, checks: SQL[]): Promise<AlreadyStored> {
  const repeated: AlreadyStored = new Map()
  if (checks.length === 0) return repeated
  const found = rowsOf<{ projectId: string }>(
    await tx.execute(sql`
      with c as materialized (select * from (values ${sql.join(checks, sql`, `)}) as v(project_id, known, as_left, sent))
      select c.project_id::text as "projectId" from c
      where c.known and ${boundedMerge(sql`c.as_left`, sql`c.sent`, END_USER_ATTRIBUTES)} = c.as_left`),
  )
  for (const { projectId } of found) repeated.set(projectId, (repeated.get(projectId) ?? 0) + 1)
  return repeated
}
