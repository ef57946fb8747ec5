import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Caller } from '../../http/auth'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { commit } from '../shared/write'
import { CustomEventBatchBody, CustomEventBody } from './model'
import { customEventRows, type CustomEventRows } from './service'
import { eventWrites } from './store'

/**
 * The id of an event sent without one: time-ordered (UUIDv7, as the tracker makes them), so new rows
 * land at the end of the primary key's index rather than on a random page of it, which costs a read
 * when the index outgrows memory and a full page image in the WAL after every checkpoint.
 */
const newEventUuid = () => Bun.randomUUIDv7()

const eventCount = (rows: CustomEventRows) => rows.events.length + rows.eventsOfSession.length

export function eventRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  const store = (caller: Caller, rows: CustomEventRows, request: Request) =>
    commit(writer, caller, request, eventCount(rows), [...eventWrites(rows), ...touchWrites(rows)])

  return new Elysia({ prefix: '/api/ingestion' })
    .use(ingestion)
    .post(
      '/customEvent',
      async ({ body, caller, reply, request }) => {
        const rows = customEventRows({ sessionId: body.sessionId, endUserId: body.endUserId, events: [body] }, caller, Date.now(), newEventUuid, randomUUID)
        await store(caller, rows, request)
        return reply(endUserAnswer(rows))
      },
      { body: CustomEventBody },
    )
    .post(
      '/customEvent/batch',
      async ({ body, caller, reply, request }) => {
        const rows = customEventRows(body, caller, Date.now(), newEventUuid, randomUUID)
        await store(caller, rows, request)
        return reply({ accepted: eventCount(rows), ...endUserAnswer(rows) })
      },
      { body: CustomEventBatchBody },
    )
}
