import { jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

export const endUsers = pgTable(
  'end_users',
  {
    projectId: projectId(),
    endUserId: text('end_user_id').notNull(),
    attributes: jsonb('attributes').notNull().default({}),
    geo: jsonb('geo'),
    firstSeenAt: at('first_seen_at').notNull().defaultNow(),
    lastSeenAt: at('last_seen_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.endUserId] })],
)
