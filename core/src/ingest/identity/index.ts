import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Caller } from '../../http/auth'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { sessionsSink } from '../sessions/store'
import { commit } from '../shared/write'
import { AuthIdentifyBody, IdentifyBody } from './model'
import { identifyRows } from './service'
import { identitySink } from './store'

export function identityRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  /** Stores the identify and answers with the person the end user is (itself, unless it was aliased). */
  const identify = async (body: IdentifyBody, authFields: string[] | null, caller: Caller, request: Request) => {
    const rows = identifyRows(body, authFields, caller, Date.now(), randomUUID)
    await commit(writer, caller, request, 1, [
      { sink: identitySink, rows: [rows.identify] },
      { sink: sessionsSink, rows: rows.sessions },
    ])
    return rows.identify.canonical ?? rows.identify.endUserId
  }

  return new Elysia({ prefix: '/api/ingestion' })
    .use(ingestion)
    .post('/user', async ({ body, caller, reply, request }) => reply({ endUserId: await identify(body, null, caller, request) }), { body: IdentifyBody })
    .post('/user/auth', async ({ body, caller, reply, request }) => reply({ endUserId: await identify(body, body.authFields, caller, request) }), {
      body: AuthIdentifyBody,
    })
}
