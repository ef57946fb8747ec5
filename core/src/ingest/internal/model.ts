import { t } from 'elysia'
import { Integer, Uuid } from '../shared/model'

export const Severity = t.Union([t.Literal('info'), t.Literal('low'), t.Literal('medium'), t.Literal('high'), t.Literal('critical')])

/** POST /api/internal/scan-findings: static-analysis results, not for browsers. */
export const ScanFindingsBody = t.Object({
  projectId: Uuid,
  source: t.Optional(t.Union([t.String({ maxLength: 256 }), t.Null()])),
  findings: t.Array(
    t.Object({
      ruleId: t.String({ minLength: 1, maxLength: 256 }),
      severity: Severity,
      file: t.String({ minLength: 1, maxLength: 4096 }),
      line: t.Optional(t.Union([Integer({ minimum: 0, maximum: 2 ** 31 - 1 }), t.Null()])),
      message: t.String(),
      fingerprint: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 512 }), t.Null()])),
    }),
    { maxItems: 10_000 },
  ),
})

export type ScanFindingsBody = typeof ScanFindingsBody.static
