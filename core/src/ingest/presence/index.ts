import { Elysia } from 'elysia'
import type { Database } from '../../db'
import type { Logger } from '../../log'
import type { Writer } from '../../writer'
import { commit, readOrUnavailable } from '../shared/write'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { HeartbeatBody, SessionEndBody } from './model'
import { presenceRows, type PresenceRows } from './service'
import { createLiveViewerReader, presenceSink } from './store'

interface PresenceDeps {
  ingestion: IngestionPlugin
  writer: Writer
  db: Database
  log: Logger
}

/** Heartbeats and goodbyes are pings: they count nothing against the monthly quota. */
const writes = (rows: PresenceRows) => [{ sink: presenceSink, rows: rows.presence }, ...touchWrites(rows)]

export function presenceRoutes({ ingestion, writer, db, log }: PresenceDeps) {
  const liveViewerOf = createLiveViewerReader(db)
  return new Elysia({ prefix: '/api/ingestion' })
    .use(ingestion)
    .post(
      '/heartbeat',
      async ({ body, caller, reply, request }) => {
        await commit(writer, caller, request, 0, writes(presenceRows(body, 'beat', caller, Date.now())))
        const liveViewer = await readOrUnavailable(liveViewerOf(caller.projectId, body.sessionId), log)
        return reply({ liveViewer })
      },
      { body: HeartbeatBody },
    )
    .post(
      '/session-end',
      async ({ body, caller, reply, request }) => {
        await commit(writer, caller, request, 0, writes(presenceRows(body, 'end', caller, Date.now())))
        return reply({})
      },
      { body: SessionEndBody },
    )
}
