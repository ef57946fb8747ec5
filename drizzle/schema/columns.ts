import { timestamp, uuid } from 'drizzle-orm/pg-core'

/** Every table leads with this column, so the schema can be distributed by project (Citus). */
export const projectId = () => uuid('project_id').notNull()

/** Timestamps are stored with time zone; the client clock arrives as epoch milliseconds. */
export const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })
export const receivedAt = () => at('received_at').notNull().defaultNow()
