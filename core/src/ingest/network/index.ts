import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import { asBatch } from '../shared/validate'
import { commit } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { NetworkBatchBody, NetworkEntryBody } from './model'
import { networkRows } from './service'
import { networkErrorsSink } from './store'

export function networkRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  const parse = asBatch('errors', NetworkEntryBody, NetworkBatchBody)
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post('/network', async ({ body, caller, reply, request }) => {
    const batch = parse(body)
    const rows = networkRows(batch, caller, Date.now(), randomUUID)
    await commit(writer, caller, request, rows.errors.length, [{ sink: networkErrorsSink, rows: rows.errors }, ...touchWrites(rows)])
    return reply({ accepted: rows.errors.length, ...endUserAnswer(rows) })
  })
}
