import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { at, projectId } from './columns'

/** Static-analysis findings from the internal route; upserted by fingerprint. */
export const scanFindings = pgTable(
  'scan_findings',
  {
    projectId: projectId(),
    fingerprint: text('fingerprint').notNull(),
    source: text('source'),
    ruleId: text('rule_id').notNull(),
    severity: text('severity').notNull(),
    file: text('file').notNull(),
    line: integer('line'),
    message: text('message').notNull(),
    firstSeenAt: at('first_seen_at').notNull().defaultNow(),
    lastSeenAt: at('last_seen_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.fingerprint] })],
)
