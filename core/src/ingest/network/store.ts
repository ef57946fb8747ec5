import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { sortedBy } from '../shared/rows'
import { insertCounted } from '../shared/insert'
import { jsonParam } from '../shared/values'
import type { NetworkErrorRow } from './service'
import { storedRow } from '../sessions/touch'

/** Network errors; (session, requestId) already stored makes the row a no-op, so a resend is stored once. */
export const networkErrorsSink: Sink<NetworkErrorRow> = {
  name: 'network_errors',
  singleStatement: true,
  async write(tx, rows) {
    const sorted = sortedBy(rows.map(storedRow), (r) => `${r.projectId}\n${r.sessionId}\n${r.requestId}`)
    return insertCounted(tx, rows, sql`
      insert into network_errors (project_id, session_id, request_id, end_user_id, url, method, status, status_text, duration_ms,
        error_type, error_message, error_name, span_name, span_status, attributes, start_time, timestamp)
      select n."projectId", n."sessionId", n."requestId", n."endUserId", n.url, n.method, n.status, n."statusText", n."durationMs",
        n."errorType", n."errorMessage", n."errorName", n."spanName", n."spanStatus", n.attributes,
        to_timestamp(n."startTime" / 1000.0), to_timestamp(n.timestamp / 1000.0)
      from jsonb_to_recordset(${jsonParam(sorted)}::jsonb) as n(
        "projectId" uuid, "sessionId" text, "requestId" text, "endUserId" text, url text, method text, status int, "statusText" text,
        "durationMs" float8, "errorType" text, "errorMessage" text, "errorName" text, "spanName" text, "spanStatus" text,
        attributes jsonb, "startTime" float8, timestamp float8)
      on conflict do nothing`)
  },
}
