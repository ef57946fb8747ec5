import { bigint, date, pgTable, primaryKey } from 'drizzle-orm/pg-core'
import { projectId } from './columns'

/** Ingested events per project per calendar month (UTC); `month` is the first day of the month. */
export const usageCounters = pgTable(
  'usage_counters',
  {
    projectId: projectId(),
    month: date('month', { mode: 'string' }).notNull(),
    events: bigint('events', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.month] })],
)
