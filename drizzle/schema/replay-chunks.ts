import { boolean, customType, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' })

/** rrweb events as sent, zstd-compressed; the content hash makes a retried chunk a no-op. */
export const replayChunks = pgTable(
  'replay_chunks',
  {
    projectId: projectId(),
    sessionId: text('session_id').notNull(),
    windowId: text('window_id').notNull().default(''),
    contentHash: text('content_hash').notNull(),
    seq: integer('seq'),
    firstTimestamp: at('first_timestamp').notNull(),
    lastTimestamp: at('last_timestamp').notNull(),
    eventCount: integer('event_count').notNull(),
    hasFullSnapshot: boolean('has_full_snapshot').notNull(),
    rawBytes: integer('raw_bytes').notNull(),
    data: bytea('data').notNull(),
    receivedAt: receivedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.sessionId, t.windowId, t.contentHash] }),
    index('replay_chunks_timeline_idx').on(t.projectId, t.sessionId, t.firstTimestamp),
  ],
)
