import { sql } from 'drizzle-orm'
import type { Sink } from '../../writer'
import { insertCounted } from '../shared/insert'
import { jsonParam } from '../shared/values'
import type { EventRow } from './service'

/** Custom events; a `uuid` already stored makes the row a no-op, so a retried send is stored once. */
export const eventsSink: Sink<EventRow> = {
  name: 'events',
  async write(tx, rows) {
    const sorted = [...rows].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0))
    return insertCounted(tx, rows, sql`
      insert into events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp)
      select e."projectId", e.uuid, e.environment, e."sessionId", e."endUserId", e."eventName", e.properties, to_timestamp(e.timestamp / 1000.0)
      from jsonb_to_recordset(${jsonParam(sorted)}::jsonb) as e(
        "projectId" uuid, uuid uuid, environment text, "sessionId" text, "endUserId" text, "eventName" text, properties jsonb, timestamp float8)
      on conflict do nothing`)
  },
}
