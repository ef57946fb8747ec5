import { boolean, index, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { at, projectId, receivedAt } from './columns'

/** One occurrence of an Issue, with where it happened so a dashboard can jump into the replay. */
export const errorEvents = pgTable(
  'error_events',
  {
    projectId: projectId(),
    contentHash: text('content_hash').notNull(),
    issueId: uuid('issue_id').notNull(),
    sessionId: text('session_id').notNull(),
    endUserId: text('end_user_id'),
    name: text('name').notNull(),
    message: text('message').notNull(),
    stack: text('stack'),
    frames: jsonb('frames'),
    url: text('url'),
    level: text('level').notNull().default('error'),
    handled: boolean('handled'),
    release: text('release'),
    context: jsonb('context'),
    timestamp: at('timestamp').notNull(),
    receivedAt: receivedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.contentHash] }),
    index('error_events_issue_idx').on(t.projectId, t.issueId, t.timestamp),
    // A session's errors, to mark them on its replay timeline.
    index('error_events_session_idx').on(t.projectId, t.sessionId, t.timestamp),
  ],
)
