import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'
import { bytea } from './replay-chunks'

/** Uploaded source maps, stored zstd-compressed; (release, name) is replaced on re-upload. */
export const sourcemaps = pgTable(
  'sourcemaps',
  {
    projectId: projectId(),
    release: text('release').notNull(),
    name: text('name').notNull(),
    url: text('url'),
    debugId: text('debug_id'),
    content: bytea('content').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    uploadedAt: at('uploaded_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.release, t.name] }), index('sourcemaps_debug_id_idx').on(t.projectId, t.debugId)],
)
