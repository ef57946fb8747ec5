import { bigint, boolean, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/**
 * Error reports grouped by fingerprint. `issue_id` is a hash of the project and fingerprint
 * (issueIdOf), so the primary key is the only unique key: a second one on the fingerprint would be
 * the same key, and two commits creating one Issue at once would meet it outside their upsert's
 * `on conflict` and fail (Postgres resolves only the arbiter's conflicts).
 */
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
  (t) => [primaryKey({ columns: [t.projectId, t.issueId] })],
)
