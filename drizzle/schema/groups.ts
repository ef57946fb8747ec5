import { jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

export const groups = pgTable(
  'groups',
  {
    projectId: projectId(),
    groupType: text('group_type').notNull(),
    groupKey: text('group_key').notNull(),
    properties: jsonb('properties').notNull().default({}),
    createdAt: at('created_at').notNull().defaultNow(),
    updatedAt: at('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.groupType, t.groupKey] })],
)
