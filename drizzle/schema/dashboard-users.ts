import { pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

export const dashboardUsers = pgTable(
  'dashboard_users',
  {
    projectId: projectId(),
    userId: uuid('user_id').notNull().defaultRandom(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    role: text('role').notNull().default('member'),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.userId] }), uniqueIndex('dashboard_users_email_idx').on(t.projectId, t.email)],
)
