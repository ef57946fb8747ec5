import { index, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/**
 * The people an Issue has affected, one row each (a device that is an alias counts as its person):
 * `issues.affected_users` grows by the rows an occurrence adds here, which stays exact when
 * occurrences of one Issue commit concurrently. The index by end user finds a device's rows when it
 * becomes an alias (issuePeopleSink), without reading every row of the project.
 */
export const issueEndUsers = pgTable(
  'issue_end_users',
  {
    projectId: projectId(),
    issueId: uuid('issue_id').notNull(),
    endUserId: text('end_user_id').notNull(),
    firstSeenAt: at('first_seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.issueId, t.endUserId] }), index('issue_end_users_end_user_idx').on(t.projectId, t.endUserId)],
)
