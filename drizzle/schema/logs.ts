import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

/** Console logs; the content hash (session, time, level, message) makes a resend a no-op. */
export const logs = pgTable(
  'logs',
  {
    projectId: projectId(),
    contentHash: text('content_hash').notNull(),
    sessionId: text('session_id').notNull(),
    endUserId: text('end_user_id'),
    level: text('level').notNull(),
    message: text('message').notNull(),
    stack: text('stack'),
    url: text('url'),
    userAgent: text('user_agent'),
    timestamp: at('timestamp').notNull(),
    receivedAt: receivedAt(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.contentHash] }), index('logs_session_idx').on(t.projectId, t.sessionId, t.timestamp)],
)
