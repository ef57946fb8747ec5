import { bigint, boolean, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** Error reports grouped by fingerprint. */
export const issues = pgTable(
  'issues',
  {
    projectId: projectId(),
    issueId: uuid('issue_id').notNull().defaultRandom(),
    fingerprint: text('fingerprint').notNull(),
    title: text('title').notNull(),
    culprit: text('culprit'),
    level: text('level').notNull().default('error'),
    /** open | resolved | ignored */
    status: text('status').notNull().default('open'),
    isRegression: boolean('is_regression').notNull().default(false),
    firstSeenAt: at('first_seen_at').notNull(),
    lastSeenAt: at('last_seen_at').notNull(),
    occurrences: bigint('occurrences', { mode: 'number' }).notNull().default(0),
    affectedUsers: bigint('affected_users', { mode: 'number' }).notNull().default(0),
    firstRelease: text('first_release'),
    lastRelease: text('last_release'),
    resolvedAt: at('resolved_at'),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.issueId] }), uniqueIndex('issues_fingerprint_idx').on(t.projectId, t.fingerprint)],
)
