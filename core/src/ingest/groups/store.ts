import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { jsonParam } from '../shared/values'
import { mergeGroups, uniqueMembers, type GroupMemberRow, type GroupRow } from './service'

/** Creates or updates groups; properties merge into what is stored. */
export const groupsSink: Sink<GroupRow> = {
  name: 'groups',
  async write(tx, rows) {
    await tx.execute(sql`
      insert into groups as g (project_id, group_type, group_key, properties, created_at, updated_at)
      select r."projectId", r."groupType", r."groupKey", r.properties, to_timestamp(r.at / 1000.0), to_timestamp(r.at / 1000.0)
      from jsonb_to_recordset(${jsonParam(mergeGroups(rows))}::jsonb) as r("projectId" uuid, "groupType" text, "groupKey" text, properties jsonb, at float8)
      on conflict (project_id, group_type, group_key) do update set
        properties = g.properties || excluded.properties,
        updated_at = greatest(g.updated_at, excluded.updated_at)`)
  },
}

/**
 * Links end users to groups; a link that exists stays as it is. A link by session takes the session's
 * end user as the commit leaves it (sessions are written first, see SinkPhase), and none if it has none.
 * Inserted in the order of the links themselves, so that concurrent commits lock them in one order.
 */
export const groupMembersSink: Sink<GroupMemberRow> = {
  name: 'group_members',
  async write(tx, rows) {
    await tx.execute(sql`
      insert into group_members (project_id, group_type, group_key, end_user_id)
      select m."projectId", m."groupType", m."groupKey", coalesce(m."endUserId", s.end_user_id)
      from jsonb_to_recordset(${jsonParam(uniqueMembers(rows))}::jsonb) as m("projectId" uuid, "groupType" text, "groupKey" text, "endUserId" text, "sessionId" text)
      left join sessions s on m."endUserId" is null and s.project_id = m."projectId" and s.session_id = m."sessionId"
      where coalesce(m."endUserId", s.end_user_id) is not null
      order by 1, 2, 3, 4
      on conflict do nothing`)
  },
}
