import { randomUUID } from 'node:crypto'
import type { Caller } from '../../http/auth'
import { requestContentHashes } from '../shared/rows'
import { MESSAGE_LIMIT_BYTES, NAME_LIMIT_BYTES, optionalText, sliceChars, STACK_LIMIT_BYTES, truncateUtf8, URL_LIMIT_BYTES } from '../shared/text'
import { ofSessionRows, sessionTouches, type OfSessionRow, type SessionTouches } from '../sessions/touch'
import { canonicalUuid, clampTimestamp } from '../shared/values'
import { normalizeDebugId } from '../sourcemaps/service'
import { errorNameOf, fingerprintOf, fingerprintParts, isInApp, issueIdOf, looksMinifiedFunction, topFrame, type GroupingFrame } from './fingerprint'
import type { ErrorBatchBody, ErrorReport } from './model'
import { MAX_FILENAME_CHARS, MAX_FRAMES, MAX_FUNCTION_CHARS, parseStack } from './stack'
import type { Frame, ReportedFrame } from './symbolicate'

/** A frame as stored with its occurrence. */
export interface StoredFrame extends Frame {
  inApp: boolean
}

/** One occurrence, with what its Issue needs. */
export interface OccurrenceRow extends OfSessionRow {
  projectId: string
  contentHash: string
  issueId: string
  fingerprint: string
  title: string
  culprit: string | null
  sessionId: string
  endUserId: string | null
  name: string
  message: string
  stack: string | null
  frames: StoredFrame[]
  url: string | null
  level: string
  handled: boolean | null
  release: string | null
  context: Record<string, unknown> | null
  timestamp: number
  /** When the service received it: an occurrence cannot have been made later, whatever the client's clock says. */
  receivedAt: number
}

export interface ErrorRows extends SessionTouches {
  occurrences: OccurrenceRow[]
}

/**
 * The frames of a report: the ready ones if it has them, else those of its stack. Either way the
 * innermost MAX_FRAMES, where the error was thrown, with file and function cut as parseStack cuts them.
 */
export function reportedFrames(report: ErrorReport): ReportedFrame[] {
  const debugIds = isObject(report.debugIds) ? report.debugIds : {}
  // By the file as sent: that is how the client keyed `debugIds`.
  const debugIdOf = (filename: string, own?: unknown) => normalizeDebugId(own) ?? (Object.hasOwn(debugIds, filename) ? normalizeDebugId(debugIds[filename]) : null)
  if (report.frames?.length) {
    return report.frames.slice(0, MAX_FRAMES).map((f) => ({
      filename: sliceChars(f.filename, 0, MAX_FILENAME_CHARS),
      function: sliceChars(f.function ?? '', 0, MAX_FUNCTION_CHARS),
      lineno: f.lineno ?? null,
      colno: f.colno ?? null,
      debugId: debugIdOf(f.filename, f.debugId),
    }))
  }
  return parseStack(report.stack ?? '').map((f) => ({ ...f, debugId: debugIdOf(f.filename) }))
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A client's `inApp` hint wins when it is a boolean; else the file decides, the original one when a
 * map led there, unless the map lists that source as third-party (bundled framework code that no
 * `node_modules/` path gives away).
 */
function storedFrames(frames: readonly Frame[], hints: readonly unknown[]): StoredFrame[] {
  return frames.map((frame, i) => {
    const hint = hints[i]
    return { ...frame, inApp: typeof hint === 'boolean' ? hint : !frame.mapped?.ignoreListed && isInApp(frame.mapped?.source ?? frame.filename) }
  })
}

/** Minified code: two-letter names, `.min.` files, or the long lines minifiers write. */
const looksMinified = (frame: Frame) => looksMinifiedFunction(frame.function) || /\.min\.[cm]?js\b/.test(frame.filename) || (frame.colno ?? 0) > 300

/**
 * A mapped frame groups by the name its original source gives it, else by the reported name when
 * that is not minified. Not by the map's name at the caller's call site: where each engine puts a
 * call differs (V8 at an `await`, at `new`; JavaScriptCore drops tail calls and async callers), so
 * the same error would get a name from one engine and none from another.
 */
function groupingFrame(frame: StoredFrame): GroupingFrame {
  if (frame.mapped?.functionFrom === 'source') return { file: frame.mapped.source, function: frame.mapped.function, inApp: frame.inApp, generated: false, readable: true }
  if (frame.mapped) return { file: frame.mapped.source, function: frame.function, inApp: frame.inApp, generated: false, readable: !looksMinifiedFunction(frame.function) }
  return { file: frame.filename, function: frame.function, inApp: frame.inApp, generated: true, readable: !looksMinified(frame) }
}

const firstLine = (text: string) => text.split('\n', 1)[0]

/**
 * Reports as occurrence rows, each with its Issue's fingerprint and id. `frames` holds each report's
 * frames, symbolicated where a map was found; a single report comes here as a batch of one. A report
 * naming no end user is its session's end user's (stored with it and counted among the Issue's
 * affected users), made (newEndUserId) when the session has none.
 */
export function errorRows(body: ErrorBatchBody, frames: readonly Frame[][], caller: Caller, receivedAt: number, newEndUserId: () => string = randomUUID): ErrorRows {
  const reports = body.errors.map((report) => ({
    report,
    sessionId: report.sessionId ?? body.sessionId,
    name: errorNameOf(truncateUtf8(report.name, NAME_LIMIT_BYTES)),
    message: truncateUtf8(report.message, MESSAGE_LIMIT_BYTES),
    stack: optionalText(report.stack, STACK_LIMIT_BYTES),
  }))
  // The client's own time, not the clamped one, so that a retry hashes the same.
  const hashes = requestContentHashes(reports.map((r) => [r.sessionId, r.report.timestampMs, r.name, r.message, r.stack, r.report.frames ?? null, r.report.url ?? null]))
  const occurrences = reports.map(({ report, sessionId, name, message, stack }, i): OccurrenceRow => {
    const stored = storedFrames(frames[i], report.frames?.length ? report.frames.map((f) => f.inApp) : [])
    const grouping = stored.map(groupingFrame)
    const fingerprint = fingerprintOf(fingerprintParts({ name, message, frames: grouping, clientFingerprint: report.fingerprint }))
    const top = topFrame(grouping)
    const culprit = top ? (top.function ? `${top.function} (${top.file})` : top.file) : null
    return {
      projectId: caller.projectId,
      contentHash: canonicalUuid(report.uuid) ?? hashes[i],
      issueId: issueIdOf(caller.projectId, fingerprint),
      fingerprint,
      title: truncateUtf8(message ? `${name}: ${firstLine(message)}` : name, 512),
      culprit,
      sessionId,
      endUserId: report.endUserId ?? body.endUserId ?? null,
      name,
      message,
      stack,
      frames: stored,
      url: optionalText(report.url, URL_LIMIT_BYTES),
      level: report.level ?? 'error',
      handled: report.handled ?? null,
      release: report.release || null,
      context: report.context ?? null,
      timestamp: clampTimestamp(report.timestampMs, receivedAt),
      receivedAt,
    }
  })
  const touches = sessionTouches(caller, occurrences.map((o) => ({ sessionId: o.sessionId, endUserId: o.endUserId, at: o.timestamp })), { newEndUserId, answered: body.sessionId })
  return { occurrences: ofSessionRows(occurrences, touches), ...touches }
}
