import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { sortedBy } from '../shared/rows'
import { jsonParam } from '../shared/values'
import type { FindingRow } from './service'

/** Findings upserted by fingerprint: a finding seen again is updated and its last sighting moves. */
export const scanFindingsSink: Sink<FindingRow> = {
  name: 'scan_findings',
  async write(tx, rows) {
    const latest = sortedBy(rows, (r) => `${r.projectId}\n${r.fingerprint}`, { lastWins: true })
    await tx.execute(sql`
      insert into scan_findings as f (project_id, fingerprint, source, rule_id, severity, file, line, message)
      select r."projectId", r.fingerprint, r.source, r."ruleId", r.severity, r.file, r.line, r.message
      from jsonb_to_recordset(${jsonParam(latest)}::jsonb) as r(
        "projectId" uuid, fingerprint text, source text, "ruleId" text, severity text, file text, line int, message text)
      on conflict (project_id, fingerprint) do update set
        source = coalesce(excluded.source, f.source),
        rule_id = excluded.rule_id,
        severity = excluded.severity,
        file = excluded.file,
        line = excluded.line,
        message = excluded.message,
        last_seen_at = now()`)
  },
}
