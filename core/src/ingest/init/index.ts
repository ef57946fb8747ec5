import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import type { ClientLocator } from '../geo/locator'
import type { IngestionPlugin } from '../plugin'
import { clientFacts } from '../sessions/client'
import { endUsersSink, sessionsSink } from '../sessions/store'
import { commit } from '../shared/write'
import { InitBody } from './model'
import { initRows } from './service'

/** Deprecated bootstrap: sessions and end users are created by whatever request names them first. */
export function initRoutes({ ingestion, writer, locator }: { ingestion: IngestionPlugin; writer: Writer; locator: ClientLocator }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/init',
    async ({ body, caller, reply, request, server, set }) => {
      set.headers.deprecation = 'true'
      const rows = initRows(body, caller, clientFacts(request, server, locator), Date.now(), randomUUID)
      // Opens a session; what the session records is counted as it arrives (0 items here).
      await commit(writer, caller, request, 0, [
        { sink: sessionsSink, rows: [rows.session] },
        { sink: endUsersSink, rows: [rows.endUser] },
      ])
      return reply({ sessionId: body.sessionId, endUserId: rows.endUserId })
    },
    { body: InitBody },
  )
}
