import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Database } from '../../db'
import { pathOf } from '../../http/cors'
import type { Logger } from '../../log'
import type { Writer } from '../../writer'
import type { ClientLocator } from '../geo/locator'
import type { IngestionPlugin } from '../plugin'
import { clientFacts } from '../sessions/client'
import { touchWrites } from '../sessions/store'
import { commit, readOrUnavailable } from '../shared/write'
import { InitBody } from './model'
import { initRows } from './service'
import { sessionEndUser } from './store'

interface InitDeps {
  ingestion: IngestionPlugin
  writer: Writer
  locator: ClientLocator
  db: Database
  log: Logger
}

const INIT_PATH = '/api/ingestion/init'

/** Deprecated bootstrap: sessions and end users are created by whatever request names them first. */
export function initRoutes({ ingestion, writer, locator, db, log }: InitDeps) {
  return new Elysia({ prefix: '/api/ingestion' })
    // Every answer of the path says so, refusals (401, 429, 503, ...) and preflight included:
    // set before routing, so it is there whatever answers.
    .onRequest(({ request, set }) => {
      if (pathOf(request.url) === INIT_PATH) set.headers.deprecation = 'true'
    })
    .use(ingestion)
    .post(
      '/init',
      async ({ body, caller, reply, request, server }) => {
        // Without an end user, the one the session already has is the answer (a retried init, or the
        // next page of the session): a new one would not be the session's, and would be left unused.
        const endUserId = body.endUserId ?? (await readOrUnavailable(sessionEndUser(db, caller.projectId, body.sessionId), log))
        const rows = initRows({ ...body, endUserId }, caller, clientFacts(request, server, locator), Date.now(), randomUUID)
        // Opens a session; what the session records is counted as it arrives (0 items here).
        await commit(writer, caller, request, 0, touchWrites(rows))
        return reply({ sessionId: body.sessionId, endUserId: rows.endUserId })
      },
      { body: InitBody },
    )
}
