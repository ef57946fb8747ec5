import { Elysia } from 'elysia'
import { rawBodyOf } from '../../http/body'
import type { Writer } from '../../writer'
import type { ClientLocator } from '../geo/locator'
import type { IngestionPlugin } from '../plugin'
import { clientFacts } from '../sessions/client'
import { endUsersSink, sessionsSink } from '../sessions/store'
import { encodeChunk, timelineHash } from './encode'
import { memoryGuard } from './memory'
import { ReplayBody } from './model'
import { eventsOf, readChunk, replayRows, storedJson } from './service'
import { replayChunksSink } from './store'

/** Bytes a request holds while queued besides its chunk: its session and end-user touches. */
const TOUCH_BYTES = 1024

const collectGarbage = memoryGuard({ floorBytes: 160 * 1024 * 1024, headroomBytes: 64 * 1024 * 1024, minIntervalMs: 250 })

export function replayRoutes({ ingestion, writer, locator }: { ingestion: IngestionPlugin; writer: Writer; locator: ClientLocator }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/events',
    async ({ body, caller, reply, request, server }) => {
      const receivedAt = Date.now()
      const chunk = readChunk(eventsOf(body.events))
      const encoded = chunk.events.length > 0 ? await encodeChunk(storedJson(body, chunk, rawBodyOf(request)), timelineHash(chunk.timeline)) : null
      const client = clientFacts(request, server, locator, body.automaticProperties)
      const rows = replayRows(body, chunk, encoded, caller, client, receivedAt)
      await writer.write({
        projectId: caller.projectId,
        monthlyLimit: caller.monthlyLimit,
        // A chunk counts once, whatever number of events it holds.
        items: rows.chunks.length,
        bytes: (encoded?.data.byteLength ?? 0) + TOUCH_BYTES,
        writes: [
          { sink: replayChunksSink, rows: rows.chunks },
          { sink: sessionsSink, rows: rows.sessions },
          { sink: endUsersSink, rows: rows.endUsers },
        ],
      })
      collectGarbage()
      return reply({ accepted: chunk.events.length, dropped: chunk.dropped })
    },
    { body: ReplayBody },
  )
}
