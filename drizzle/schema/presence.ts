import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** One row per live browser window; a session is live while any of its windows beat recently. */
export const presence = pgTable(
  'presence',
  {
    projectId: projectId(),
    sessionId: text('session_id').notNull(),
    windowId: text('window_id').notNull().default(''),
    endUserId: text('end_user_id'),
    url: text('url'),
    lastSeenAt: at('last_seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.sessionId, t.windowId] }), index('presence_last_seen_idx').on(t.projectId, t.lastSeenAt)],
)
