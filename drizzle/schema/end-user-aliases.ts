import { index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** An end user id that auth-aware identify found to be the same person as `end_user_id`. */
export const endUserAliases = pgTable(
  'end_user_aliases',
  {
    projectId: projectId(),
    aliasId: text('alias_id').notNull(),
    endUserId: text('end_user_id').notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.aliasId] }), index('end_user_aliases_canonical_idx').on(t.projectId, t.endUserId)],
)
