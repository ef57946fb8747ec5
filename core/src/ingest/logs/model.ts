import { t } from 'elysia'
import { EpochMs, Id, OptionalEndUserId } from '../shared/model'

export const LogLevel = t.Union([t.Literal('debug'), t.Literal('info'), t.Literal('log'), t.Literal('warn'), t.Literal('error')])

/** Free texts have no length limit here: the service truncates what is too long (WIRE.md). */
const entryFields = {
  level: LogLevel,
  message: t.String(),
  stack: t.Optional(t.Union([t.String(), t.Null()])),
  url: t.Optional(t.Union([t.String(), t.Null()])),
  timestampMs: EpochMs,
  endUserId: OptionalEndUserId,
  userAgent: t.Optional(t.Union([t.String(), t.Null()])),
}

/** POST /logs, one entry (fielded). */
export const LogEntryBody = t.Object({ ...entryFields, sessionId: Id })

/** POST /logs, a batch: entries may name their own session and end user, else the batch's. */
export const LogBatchBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  logs: t.Array(t.Object({ ...entryFields, sessionId: t.Optional(Id) }), { minItems: 1, maxItems: 1000 }),
})

export type LogEntryBody = typeof LogEntryBody.static
export type LogBatchBody = typeof LogBatchBody.static
