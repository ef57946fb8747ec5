import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import { validator } from '../shared/validate'
import { commit } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { SpanBatchBody } from './model'
import { spanRows } from './service'
import { spansSink } from './store'

export function spanRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  // Checked here rather than by Elysia, whose error for a nullable object (`status`, `events`) names
  // the field, not what in it is wrong.
  const parse = validator(SpanBatchBody)
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/spans/batch', async ({ body, caller, reply, request }) => {
    const rows = spanRows(parse(body), caller, Date.now(), randomUUID)
    await commit(writer, caller, request, rows.spans.length, [{ sink: spansSink, rows: rows.spans }, ...touchWrites(rows)])
    return reply({ accepted: rows.spans.length, ...endUserAnswer(rows) })
  })
}
