import { foreignKey, index, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'
import { environments } from './environments'

/** Public ingestion keys. Only a SHA-256 hash and a short display prefix are stored. */
export const apiKeys = pgTable(
  'api_keys',
  {
    projectId: projectId(),
    keyId: uuid('key_id').notNull().defaultRandom(),
    environment: text('environment').notNull(),
    keyHash: text('key_hash').notNull(),
    keyPrefix: text('key_prefix').notNull(),
    createdAt: at('created_at').notNull().defaultNow(),
    revokedAt: at('revoked_at'),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.keyId] }),
    uniqueIndex('api_keys_key_hash_idx').on(t.keyHash),
    index('api_keys_environment_idx').on(t.projectId, t.environment),
    foreignKey({ columns: [t.projectId, t.environment], foreignColumns: [environments.projectId, environments.name] }).onDelete('cascade'),
  ],
)
