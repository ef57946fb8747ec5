import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { sortedBy } from '../shared/rows'
import { insertCounted } from '../shared/insert'
import { jsonParam } from '../shared/values'
import type { SpanRow } from './service'
import { storedRow } from '../sessions/touch'

/**
 * Spans; (traceId, spanId) already stored makes the row a no-op, so a resend is stored once.
 * `duration_ms` is the stored end less the stored start, taken from the stored times: timestamptz
 * keeps microseconds, and a browser's times have finer fractions (and a difference of two epoch
 * times in float8 is off by up to a quarter of a microsecond), so 0.2 ms was stored as 0.19995.
 */
export const spansSink: Sink<SpanRow> = {
  name: 'spans',
  singleStatement: true,
  async write(tx, rows) {
    const sorted = sortedBy(rows.map(storedRow), (r) => `${r.projectId}\n${r.traceId}\n${r.spanId}`)
    return insertCounted(tx, rows, sql`
      insert into spans (project_id, trace_id, span_id, parent_span_id, session_id, end_user_id, name, kind,
        start_time, end_time, duration_ms, status_code, status_message, attributes, events)
      select s."projectId", s."traceId", s."spanId", s."parentSpanId", s."sessionId", s."endUserId", s.name, s.kind,
        t.start_time, t.end_time, (extract(epoch from t.end_time - t.start_time) * 1000)::float8, s."statusCode", s."statusMessage",
        s.attributes, s.events
      from jsonb_to_recordset(${jsonParam(sorted)}::jsonb) as s(
        "projectId" uuid, "traceId" text, "spanId" text, "parentSpanId" text, "sessionId" text, "endUserId" text, name text, kind text,
        "startTime" float8, "endTime" float8, "statusCode" text, "statusMessage" text, attributes jsonb, events jsonb),
      lateral (select to_timestamp(s."startTime" / 1000.0) as start_time, to_timestamp(s."endTime" / 1000.0) as end_time) as t
      on conflict do nothing`)
  },
}
