import { doublePrecision, index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

export const networkErrors = pgTable(
  'network_errors',
  {
    projectId: projectId(),
    sessionId: text('session_id').notNull(),
    requestId: text('request_id').notNull(),
    endUserId: text('end_user_id'),
    url: text('url').notNull(),
    method: text('method').notNull(),
    status: integer('status'),
    statusText: text('status_text'),
    durationMs: doublePrecision('duration_ms'),
    errorType: text('error_type'),
    errorMessage: text('error_message'),
    errorName: text('error_name'),
    spanName: text('span_name'),
    spanStatus: text('span_status'),
    attributes: jsonb('attributes'),
    startTime: at('start_time'),
    timestamp: at('timestamp').notNull(),
    receivedAt: receivedAt(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.sessionId, t.requestId] }), index('network_errors_time_idx').on(t.projectId, t.timestamp)],
)
