import { t } from 'elysia'
import { EpochMs, itemOrBatch, OptionalEndUserId, OptionalText } from '../shared/model'

export const LogLevel = t.Union([t.Literal('debug'), t.Literal('info'), t.Literal('log'), t.Literal('warn'), t.Literal('error')])

/** Free texts have no length limit here: the service truncates what is too long (WIRE.md). */
const entryFields = {
  level: LogLevel,
  message: t.String(),
  stack: OptionalText,
  url: OptionalText,
  timestampMs: EpochMs,
  endUserId: OptionalEndUserId,
  userAgent: OptionalText,
}

const bodies = itemOrBatch('logs', entryFields, 1000)
/** POST /logs, one entry (fielded). */
export const LogEntryBody = bodies.item
/** POST /logs, a batch: entries may name their own session and end user, else the batch's. */
export const LogBatchBody = bodies.batch

export type LogEntryBody = typeof LogEntryBody.static
export type LogBatchBody = typeof LogBatchBody.static
