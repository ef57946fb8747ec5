import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import { asBatch } from '../shared/validate'
import { commit } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { readsAliases } from '../identity/service'
import { identitySink } from '../identity/store'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import type { SourceMapResolver } from '../sourcemaps/resolver'
import { ErrorBatchBody, ErrorReportBody } from './model'
import { errorRows } from './service'
import { errorEventsSink } from './store'
import { symbolicateReports } from './symbolicate'

interface ErrorDeps {
  ingestion: IngestionPlugin
  writer: Writer
  sourceMaps: SourceMapResolver
}

export function errorRoutes({ ingestion, writer, sourceMaps }: ErrorDeps) {
  const parse = asBatch('errors', ErrorReportBody, ErrorBatchBody)
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/errors', async ({ body, caller, reply, request }) => {
    const batch = parse(body)
    const frames = await symbolicateReports(batch.errors, (release, files) => sourceMaps.lookupFor(caller.projectId, release, files))
    const rows = errorRows(batch, frames, caller, Date.now(), randomUUID)
    // Issue users are counted by the person of their device: the commit holds the project's aliases
    // still until it ends (see ReadsAliases).
    const aliases = rows.occurrences.length > 0 ? [{ sink: identitySink, rows: [readsAliases(caller.projectId)] }] : []
    await commit(writer, caller, request, rows.occurrences.length, [{ sink: errorEventsSink, rows: rows.occurrences }, ...aliases, ...touchWrites(rows)])
    return reply({ accepted: rows.occurrences.length, issues: rows.occurrences.map((o) => o.issueId), ...endUserAnswer(rows) })
  })
}
