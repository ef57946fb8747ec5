import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { insertCounted } from '../shared/insert'
import { jsonParam } from '../shared/values'
import { sortedBy } from '../shared/rows'
import type { LogRow } from './service'
import { storedRow } from '../sessions/touch'

/** Log lines; a content hash already stored makes the row a no-op, so a resent batch is stored once. */
export const logsSink: Sink<LogRow> = {
  name: 'logs',
  singleStatement: true,
  async write(tx, rows) {
    return insertCounted(tx, rows, sql`
      insert into logs (project_id, content_hash, session_id, end_user_id, level, message, stack, url, user_agent, timestamp)
      select l."projectId", l."contentHash", l."sessionId", l."endUserId", l.level, l.message, l.stack, l.url, l."userAgent", to_timestamp(l.timestamp / 1000.0)
      from jsonb_to_recordset(${jsonParam(sortedBy(rows.map(storedRow), (r) => `${r.projectId}\n${r.contentHash}`))}::jsonb) as l(
        "projectId" uuid, "contentHash" text, "sessionId" text, "endUserId" text, level text, message text, stack text, url text, "userAgent" text, timestamp float8)
      on conflict do nothing`)
  },
}
