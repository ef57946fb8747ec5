import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import { asBatch } from '../shared/validate'
import { commit } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import type { SourceMapResolver } from '../sourcemaps/resolver'
import { ErrorBatchBody, ErrorReportBody } from './model'
import { errorRows, reportedFrames } from './service'
import { errorEventsSink } from './store'
import { symbolicate } from './symbolicate'

interface ErrorDeps {
  ingestion: IngestionPlugin
  writer: Writer
  sourceMaps: SourceMapResolver
}

export function errorRoutes({ ingestion, writer, sourceMaps }: ErrorDeps) {
  const parse = asBatch('errors', ErrorReportBody, ErrorBatchBody)
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/errors', async ({ body, caller, reply, request }) => {
    const batch = parse(body)
    const reported = batch.errors.map(reportedFrames)
    // One source map lookup per release in the batch, not per report.
    const releases = [...new Set(batch.errors.map((report) => report.release ?? null))]
    const lookups = new Map(
      await Promise.all(
        releases.map(async (release) => {
          const files = reported.filter((_, i) => (batch.errors[i].release ?? null) === release).flat()
          return [release, await sourceMaps.lookupFor(caller.projectId, release, files)] as const
        }),
      ),
    )
    const frames = reported.map((list, i) => symbolicate(list, lookups.get(batch.errors[i].release ?? null)!))
    const rows = errorRows(batch, frames, caller, Date.now())
    await commit(writer, caller, request, rows.occurrences.length, [{ sink: errorEventsSink, rows: rows.occurrences }, ...touchWrites(rows)])
    return reply({ accepted: rows.occurrences.length, issues: rows.occurrences.map((o) => o.issueId) })
  })
}
