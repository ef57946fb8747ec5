import { bigint, pgTable, text, uuid } from 'drizzle-orm/pg-core'
import { at } from './columns'

export const projects = pgTable('projects', {
  projectId: uuid('project_id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  /** Events per calendar month; null means unlimited. */
  monthlyLimit: bigint('monthly_limit', { mode: 'number' }),
  createdAt: at('created_at').notNull().defaultNow(),
})
