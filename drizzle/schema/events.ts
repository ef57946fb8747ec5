import { index, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

/** Custom analytics events; `uuid` (client-made or server-made) makes a resend a no-op. */
export const events = pgTable(
  'events',
  {
    projectId: projectId(),
    uuid: uuid('uuid').notNull(),
    environment: text('environment').notNull(),
    sessionId: text('session_id').notNull(),
    endUserId: text('end_user_id'),
    eventName: text('event_name').notNull(),
    properties: jsonb('properties'),
    timestamp: at('timestamp').notNull(),
    receivedAt: receivedAt(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.uuid] }), index('events_name_time_idx').on(t.projectId, t.eventName, t.timestamp)],
)
