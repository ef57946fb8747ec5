import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { copyRow, jsonText, timestampText } from '../shared/copy'
import { insertCounted } from '../shared/insert'
import { sortedBy } from '../shared/rows'
import { jsonParam } from '../shared/values'
import type { EventRow } from './service'

const byUuid = (rows: EventRow[]) => sortedBy(rows, (row) => row.uuid)

/** Custom events; a `uuid` already stored makes the row a no-op, so a retried send is stored once. */
export const eventsSink: Sink<EventRow> = {
  name: 'events',
  singleStatement: true,
  async write(tx, rows) {
    return insertCounted(tx, rows, sql`
      insert into events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp)
      select e."projectId", e.uuid, e.environment, e."sessionId", e."endUserId", e."eventName", e.properties, to_timestamp(e.timestamp / 1000.0)
      from jsonb_to_recordset(${jsonParam(byUuid(rows))}::jsonb) as e(
        "projectId" uuid, uuid uuid, environment text, "sessionId" text, "endUserId" text, "eventName" text, properties jsonb, timestamp float8)
      on conflict do nothing`)
  },
  copy: {
    statement: 'copy events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp) from stdin',
    text: (rows) =>
      byUuid(rows)
        .map((e) => copyRow([e.projectId, e.uuid, e.environment, e.sessionId, e.endUserId, e.eventName, jsonText(e.properties), timestampText(e.timestamp)]))
        .join(''),
  },
}
