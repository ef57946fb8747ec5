import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

export const groupMembers = pgTable(
  'group_members',
  {
    projectId: projectId(),
    groupType: text('group_type').notNull(),
    groupKey: text('group_key').notNull(),
    endUserId: text('end_user_id').notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.groupType, t.groupKey, t.endUserId] }),
    index('group_members_user_idx').on(t.projectId, t.endUserId),
  ],
)
