import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import type { ClientLocator } from '../geo/locator'
import { headerKeyCheck, type IngestionDeps, type IngestionPlugin } from '../plugin'
import { clientFacts } from '../sessions/client'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { createGate } from './gate'
import { replayBodyReader } from './intake'
import { ReplayBody } from './model'
import { receivedChunkOf, replayRows } from './service'
import { replayChunksSink } from './store'

/** Bytes a request holds while queued besides its chunk: its session and end-user touches. */
const TOUCH_BYTES = 1024

/**
 * `/events` bodies are read by the replay feature itself (see intake.ts), a few at a time;
 * `createApp` hands this to the body parser.
 */
export function replayBodyReaders(deps: IngestionDeps) {
  const gate = createGate({ concurrency: 4, maxWaitingBytes: 64 * 1024 * 1024, maxWaitMs: 10_000 })
  return { '/api/ingestion/events': replayBodyReader(gate, headerKeyCheck(deps)) }
}

export function replayRoutes({ ingestion, writer, locator }: { ingestion: IngestionPlugin; writer: Writer; locator: ClientLocator }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/events',
    async ({ body, caller, reply, request, server }) => {
      const receivedAt = Date.now()
      const chunk = receivedChunkOf(body)
      const client = await clientFacts(request, server, locator, body.automaticProperties)
      const rows = replayRows(body, chunk, caller, client, receivedAt, randomUUID)
      await writer.write({
        projectId: caller.projectId,
        monthlyLimit: caller.monthlyLimit,
        // A chunk counts once, whatever number of events it holds.
        items: rows.chunks.length,
        bytes: (chunk.encoded?.data.byteLength ?? 0) + TOUCH_BYTES,
        writes: [{ sink: replayChunksSink, rows: rows.chunks }, ...touchWrites(rows)],
      })
      return reply({ accepted: chunk.accepted, dropped: chunk.dropped, ...endUserAnswer(rows) })
    },
    { body: ReplayBody },
  )
}
