import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { asBatch } from '../shared/validate'
import { LogBatchBody, LogEntryBody } from './model'
import { commit } from '../shared/write'
import { logRows } from './service'
import { logsSink } from './store'

export function logRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  const parse = asBatch('logs', LogEntryBody, LogBatchBody)
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/logs', async ({ body, caller, reply, request }) => {
    const batch = parse(body)
    const rows = logRows(batch, caller, Date.now(), randomUUID)
    await commit(writer, caller, request, rows.logs.length, [{ sink: logsSink, rows: rows.logs }, ...touchWrites(rows)])
    return reply({ accepted: rows.logs.length, ...endUserAnswer(rows) })
  })
}
