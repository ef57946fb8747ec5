import { bigint, date, pgTable, primaryKey, smallint } from 'drizzle-orm/pg-core'
import { projectId } from './columns'

/**
 * Ingested events per project per calendar month (UTC); `month` is the first day of the month. A
 * month's count is the sum over a few `shard` rows: concurrent commits add to different rows, so they
 * do not wait for each other's commit on one row lock.
 */
export const usageCounters = pgTable(
  'usage_counters',
  {
    projectId: projectId(),
    month: date('month', { mode: 'string' }).notNull(),
    shard: smallint('shard').notNull().default(0),
    events: bigint('events', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.month, t.shard] })],
)
