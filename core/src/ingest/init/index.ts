import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import { pathOf } from '../../http/routes'
import type { Writer } from '../../writer'
import type { ClientLocator } from '../geo/locator'
import type { IngestionPlugin } from '../plugin'
import { clientFacts } from '../sessions/client'
import { touchWrites } from '../sessions/store'
import { commit } from '../shared/write'
import { InitBody } from './model'
import { initRows } from './service'

interface InitDeps {
  ingestion: IngestionPlugin
  writer: Writer
  locator: ClientLocator
}

const INIT_PATH = '/api/ingestion/init'

/** Deprecated bootstrap: sessions and end users are created by whatever request names them first. */
export function initRoutes({ ingestion, writer, locator }: InitDeps) {
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
        const rows = initRows(body, caller, await clientFacts(request, server, locator), Date.now(), randomUUID)
        // Opens a session; what the session records is counted as it arrives (0 items here). Without
        // an end user named, the one the session has is the answer, decided in the commit.
        await commit(writer, caller, request, 0, touchWrites(rows))
        return reply({ sessionId: body.sessionId, endUserId: rows.ofSession?.endUserId ?? rows.endUserId })
      },
      { body: InitBody },
    )
}
