import { t } from 'elysia'
import { EpochMs, Integer, itemOrBatch, Nullish, OptionalEndUserId, OptionalText, Properties } from '../shared/model'

const Position = Nullish(Integer({ minimum: 0, maximum: 2 ** 31 - 1 }))

/**
 * A report's release, as an upload's (see sourcemaps/model.ts) but for the empty text: a page whose
 * release is configured from an unset variable sends "", and refusing that would cost every error
 * report of the batch. Empty is no release (see the service).
 */
const ReportRelease = t.String({ maxLength: 256, pattern: '^[^\\u0000-\\u001f]*$' })

/**
 * A field this model adds to WIRE.md's report: any value is taken, and the service keeps it only
 * when it is well-formed (a malformed hint costs the hint, never the report or its batch).
 */
const Extension = t.Optional(t.Unknown())

/**
 * A ready frame, innermost first as in `stack`; `inApp` (a boolean) and `debugId` are optional hints.
 * Names of any length: the service cuts them (a minified or generated name may be long).
 */
export const ReportFrame = t.Object({
  filename: t.String(),
  function: Nullish(t.String()),
  lineno: Position,
  colno: Position,
  inApp: Extension,
  debugId: Extension,
})

const reportFields = {
  endUserId: OptionalEndUserId,
  /** Any length, cut to 1 KB (see the service): a page may name its errors as it likes. */
  name: t.String(),
  message: t.String(),
  stack: OptionalText,
  /** Any number: a deep recursion has thousands. The innermost MAX_FRAMES are kept (see reportedFrames). */
  frames: Nullish(t.Array(ReportFrame)),
  url: OptionalText,
  timestampMs: EpochMs,
  release: Nullish(ReportRelease),
  level: Nullish(t.Union([t.Literal('error'), t.Literal('warning'), t.Literal('fatal')])),
  handled: Nullish(t.Boolean()),
  /** Any number of entries of any length, all of it grouped by (see fingerprintParts). */
  fingerprint: Nullish(t.Array(t.String({ minLength: 1 }))),
  context: Properties,
  /**
   * The client's id of this occurrence, a UUID with or without its dashes: with it a resend is stored
   * once whatever else changed. Anything else is ignored (the content then identifies a resend).
   */
  uuid: Extension,
  /** Script URL -> debug id of the build it came from, for scripts whose maps carry one; ids that are not debug ids are ignored. */
  debugIds: Extension,
}

const bodies = itemOrBatch('errors', reportFields, 100)
/** POST /errors, one report. */
export const ErrorReportBody = bodies.item
/** POST /errors, a batch: reports may name their own session and end user, else the batch's. */
export const ErrorBatchBody = bodies.batch

export type ErrorReportBody = typeof ErrorReportBody.static
export type ErrorBatchBody = typeof ErrorBatchBody.static
export type ErrorReport = ErrorBatchBody['errors'][number]
