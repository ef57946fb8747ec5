import { t } from 'elysia'
import { EpochMs, itemOrBatch, OptionalEndUserId, OptionalText, Properties, Uuid } from '../shared/model'
import { Release } from '../sourcemaps/model'
import { MAX_FILENAME_CHARS, MAX_FUNCTION_CHARS } from './stack'

const Position = t.Optional(t.Union([t.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }), t.Null()]))

/** A ready frame, innermost first as in `stack`; `inApp` and `debugId` are optional hints. */
export const ReportFrame = t.Object({
  filename: t.String({ maxLength: MAX_FILENAME_CHARS }),
  function: t.Optional(t.Union([t.String({ maxLength: MAX_FUNCTION_CHARS }), t.Null()])),
  lineno: Position,
  colno: Position,
  inApp: t.Optional(t.Boolean()),
  debugId: t.Optional(t.String({ maxLength: 64 })),
})

const reportFields = {
  endUserId: OptionalEndUserId,
  /** Any length, cut to 1 KB (see the service): a page may name its errors as it likes. */
  name: t.String(),
  message: t.String(),
  stack: OptionalText,
  frames: t.Optional(t.Union([t.Array(ReportFrame, { maxItems: 500 }), t.Null()])),
  url: OptionalText,
  timestampMs: EpochMs,
  release: t.Optional(t.Union([Release, t.Null()])),
  level: t.Optional(t.Union([t.Literal('error'), t.Literal('warning'), t.Literal('fatal')])),
  handled: t.Optional(t.Union([t.Boolean(), t.Null()])),
  fingerprint: t.Optional(t.Union([t.Array(t.String({ minLength: 1, maxLength: 512 }), { maxItems: 32 }), t.Null()])),
  context: Properties,
  /** The client's id of this occurrence: with it a resend is stored once whatever else changed. */
  uuid: t.Optional(Uuid),
  /** Script URL -> debug id of the build it came from, for scripts whose maps carry one. */
  debugIds: t.Optional(t.Record(t.String(), t.String({ maxLength: 64 }))),
}

const bodies = itemOrBatch('errors', reportFields, 100)
/** POST /errors, one report. */
export const ErrorReportBody = bodies.item
/** POST /errors, a batch: reports may name their own session and end user, else the batch's. */
export const ErrorBatchBody = bodies.batch

export type ErrorReportBody = typeof ErrorReportBody.static
export type ErrorBatchBody = typeof ErrorBatchBody.static
export type ErrorReport = ErrorBatchBody['errors'][number]
