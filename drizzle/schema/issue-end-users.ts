import { pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/**
 * The end users an Issue has affected, one row each: `issues.affected_users` grows by the rows an
 * occurrence adds here, which stays exact when occurrences of one Issue commit concurrently.
 */
export const issueEndUsers = pgTable(
  'issue_end_users',
  {
    projectId: projectId(),
    issueId: uuid('issue_id').notNull(),
    endUserId: text('end_user_id').notNull(),
    firstSeenAt: at('first_seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.issueId, t.endUserId] })],
)
