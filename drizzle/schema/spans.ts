import { doublePrecision, index, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

export const spans = pgTable(
  'spans',
  {
    projectId: projectId(),
    traceId: text('trace_id').notNull(),
    spanId: text('span_id').notNull(),
    parentSpanId: text('parent_span_id'),
    sessionId: text('session_id'),
    endUserId: text('end_user_id'),
    name: text('name').notNull(),
    kind: text('kind').notNull().default('internal'),
    startTime: at('start_time').notNull(),
    endTime: at('end_time').notNull(),
    durationMs: doublePrecision('duration_ms').notNull(),
    statusCode: text('status_code').notNull().default('unset'),
    statusMessage: text('status_message'),
    attributes: jsonb('attributes'),
    events: jsonb('events'),
    receivedAt: receivedAt(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.traceId, t.spanId] }), index('spans_session_idx').on(t.projectId, t.sessionId)],
)
