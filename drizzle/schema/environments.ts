import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'
import { projects } from './projects'

export const environments = pgTable(
  'environments',
  {
    projectId: projectId().references(() => projects.projectId, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.name] })],
)
