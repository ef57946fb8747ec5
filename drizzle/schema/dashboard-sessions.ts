import { pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** Dashboard login sessions; the cookie carries a random token, only its hash is stored. */
export const dashboardSessions = pgTable(
  'dashboard_sessions',
  {
    projectId: projectId(),
    tokenHash: text('token_hash').notNull(),
    userId: uuid('user_id').notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
    expiresAt: at('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.tokenHash] }), uniqueIndex('dashboard_sessions_token_idx').on(t.tokenHash)],
)
