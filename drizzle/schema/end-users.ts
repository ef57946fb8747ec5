import { sql } from 'drizzle-orm'
import { boolean, index, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

export const endUsers = pgTable(
  'end_users',
  {
    projectId: projectId(),
    endUserId: text('end_user_id').notNull(),
    attributes: jsonb('attributes').notNull().default({}),
    geo: jsonb('geo'),
    firstSeenAt: at('first_seen_at').notNull().defaultNow(),
    lastSeenAt: at('last_seen_at').notNull().defaultNow(),
    /** As sessions' `times_are_receipt`, for `first_seen_at` and `last_seen_at`. */
    timesAreReceipt: boolean('times_are_receipt'),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.endUserId] }),
    // Auth-aware identify finds a person by containment of the auth values, compared as
    // sightline_auth_values folds them (an email address trimmed and in lowercase; the function is made
    // by migration 0009), inside the commit every waiting request shares: without this index that is a
    // scan of every end user (about 100 ms at 300,000), with it well under a millisecond.
    index('end_users_auth_values_idx').using('gin', sql`sightline_auth_values(${t.attributes}) jsonb_path_ops`),
  ],
)
