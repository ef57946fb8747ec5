import { sql } from 'drizzle-orm'
import { rowsOf, type Orm } from '../../db'
import type { AlreadyStored, Sink } from '../../sink'
import { boundedMerge, fittingIfOver, GROUP_PROPERTIES, insertedValue } from '../sessions/bounded-merge'
import { jsonParam } from '../shared/values'
import { mergeGroups, uniqueMembers, type GroupMemberRow, type GroupRow } from './service'

/**
 * Group identifies, one row each: creates or updates groups (properties merge into what is stored),
 * then links their end users (groupMembersSink's statement, in the same commit). One sink, so that it
 * can tell, before writing, which of them change nothing (resends): those count once.
 */
export const groupsSink: Sink<GroupRow> = {
  name: 'groups',
  async write(tx, rows) {
    // A transaction's statements run in the order they are sent: the check reads groups and links as
    // they were before this commit's writes, and costs no round trip of its own.
    const members = rows.flatMap((r) => (r.member ? [r.member] : []))
    const [repeated] = await Promise.all([repeatedGroupIdentifies(tx, rows), writeGroups(tx, rows), groupMembersSink.write(tx, members)])
    return repeated
  },
}

/** Per project, the group identifies of `rows` that change nothing stored (nor written before them in the commit). */
async function repeatedGroupIdentifies(tx: Orm, rows: readonly GroupRow[]): Promise<AlreadyStored> {
  const before = new Map<string, Record<string, unknown>>()
  const linked = new Set<string>()
  const judged = rows.map((row) => {
    const group = JSON.stringify([row.projectId, row.groupType, row.groupKey])
    const link = row.member && JSON.stringify([group, row.member.endUserId, row.member.sessionId])
    const item = {
      projectId: row.projectId,
      groupType: row.groupType,
      groupKey: row.groupKey,
      properties: row.properties,
      // What earlier identifies of the commit write to the group, and whether one links the same member.
      before: before.get(group) ?? null,
      endUserId: row.member?.endUserId ?? null,
      sessionId: row.member?.sessionId ?? null,
      linkedBefore: link ? linked.has(link) : true,
    }
    before.set(group, { ...before.get(group), ...row.properties })
    if (link) linked.add(link)
    return item
  })
  // Properties are judged as writeGroups merges them (boundedMerge: at the bound, a new name is
  // dropped and changes nothing). Materialized: boundedMerge repeats its arguments, and the properties
  // as left (a copy of up to the bound's size) would otherwise be computed again at each use. Groups
  // and sessions are looked up one key at a time (laterals kept unflattened by `offset 0`): joined
  // plainly to jsonb_to_recordset, guessed at 100 rows, every group of every project was scanned.
  const found = rowsOf<{ projectId: string }>(
    await tx.execute(sql`
      with j as materialized (
        select r.*, g.project_id is not null as stored, s.end_user_id as session_end_user,
          coalesce(g.properties, '{}'::jsonb) || coalesce(r.before, '{}'::jsonb) as as_left, coalesce(r.properties, '{}'::jsonb) as sent
        from jsonb_to_recordset(${jsonParam(judged)}::jsonb) as r("projectId" uuid, "groupType" text, "groupKey" text, properties jsonb, before jsonb,
          "endUserId" text, "sessionId" text, "linkedBefore" boolean)
        left join lateral (
          select project_id, properties from groups
          where project_id = r."projectId" and group_type = r."groupType" and group_key = r."groupKey" offset 0
        ) g on true
        left join lateral (
          select end_user_id from sessions where r."endUserId" is null and project_id = r."projectId" and session_id = r."sessionId" offset 0
        ) s on true
      )
      select j."projectId"::text as "projectId" from j
      where (j.stored or j.before is not null)
        and ${boundedMerge(sql`j.as_left`, sql`j.sent`, GROUP_PROPERTIES)} = j.as_left
        and (j."linkedBefore" or coalesce(j."endUserId", j.session_end_user) is null
             or exists (select 1 from group_members m where m.project_id = j."projectId" and m.group_type = j."groupType"
                          and m.group_key = j."groupKey" and m.end_user_id = coalesce(j."endUserId", j.session_end_user)))`),
  )
  const repeated: AlreadyStored = new Map()
  for (const { projectId } of found) repeated.set(projectId, (repeated.get(projectId) ?? 0) + 1)
  return repeated
}

async function writeGroups(tx: Orm, rows: readonly GroupRow[]): Promise<void> {
  const groups = mergeGroups(rows).map((g) => ({ ...g, fittingProperties: fittingIfOver(g.properties, GROUP_PROPERTIES) }))
  const existing = sql`select from groups e where e.project_id = r."projectId" and e.group_type = r."groupType" and e.group_key = r."groupKey"`
  await tx.execute(sql`
      insert into groups as g (project_id, group_type, group_key, properties, created_at, updated_at)
      select r."projectId", r."groupType", r."groupKey", ${insertedValue(sql`r.properties`, sql`r."fittingProperties"`, existing)}, to_timestamp(r.at / 1000.0), to_timestamp(r.at / 1000.0)
      from jsonb_to_recordset(${jsonParam(groups)}::jsonb)
        as r("projectId" uuid, "groupType" text, "groupKey" text, properties jsonb, "fittingProperties" jsonb, at float8)
      on conflict (project_id, group_type, group_key) do update set
        properties = ${boundedMerge(sql`g.properties`, sql`excluded.properties`, GROUP_PROPERTIES)},
        updated_at = greatest(g.updated_at, excluded.updated_at)`)
}

/**
 * Links end users to groups; a link that exists stays as it is. A link by session takes the session's
 * end user as the commit leaves it (sessions are written first, see SinkPhase), and none if it has none.
 * Inserted in the order of the links themselves, so that concurrent commits lock them in one order.
 */
const groupMembersSink: Sink<GroupMemberRow> = {
  name: 'group_members',
  async write(tx, rows) {
    await tx.execute(sql`
      insert into group_members (project_id, group_type, group_key, end_user_id)
      select m."projectId", m."groupType", m."groupKey", coalesce(m."endUserId", s.end_user_id)
      from jsonb_to_recordset(${jsonParam(uniqueMembers(rows))}::jsonb) as m("projectId" uuid, "groupType" text, "groupKey" text, "endUserId" text, "sessionId" text)
      -- One lookup per link by session (see repeatedGroupIdentifies), never a scan of every session.
      left join lateral (
        select end_user_id from sessions where m."endUserId" is null and project_id = m."projectId" and session_id = m."sessionId" offset 0
      ) s on true
      where coalesce(m."endUserId", s.end_user_id) is not null
      order by 1, 2, 3, 4
      on conflict do nothing`)
  },
}
