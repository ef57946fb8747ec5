import { decodedMappings, originalPositionFor, type TraceMap } from '@jridgewell/trace-mapping'
import type { LoadedSourceMap } from '../sourcemaps/cache'
import type { FrameFile, SourceMapLookup } from '../sourcemaps/resolver'
import { isInApp, looksMinifiedFunction, normalizeFunction } from './fingerprint'
import type { ErrorReport } from './model'
import { functionScopes, type FunctionScopes } from './scope'
import { reportedFrames } from './service'
import { MAX_FILENAME_CHARS, MAX_FUNCTION_CHARS } from './stack'
import { sliceChars } from '../shared/text'

/** A frame as the client reported it (or as its stack said), innermost first. */
export interface ReportedFrame {
  filename: string
  function: string
  lineno: number | null
  colno: number | null
  debugId: string | null
}

/** Where a source map led a frame: the original file, position (1-based) and function. */
export interface MappedPosition {
  source: string
  line: number
  column: number
  function: string
  /**
   * Where `function` came from: the original source around the position, the map's name at the
   * caller's call site, or the frame as reported; absent when no name was found.
   */
  functionFrom?: 'source' | 'call site' | 'reported'
  /** The stored map that was used. */
  sourcemap: string
  /** The map lists the source as third-party code (its ignore list): the frame is not in-app. */
  ignoreListed?: true
  preContext?: string[]
  contextLine?: string
  postContext?: string[]
}

/** A stored frame: what was reported, plus where it maps to when a source map knew. */
export interface Frame extends ReportedFrame {
  mapped?: MappedPosition
}

const CONTEXT_LINES = 5
const CONTEXT_LINE_CHARS = 300

interface Traced {
  loaded: LoadedSourceMap
  source: string
  line: number
  /** 0-based, as trace-mapping gives it. */
  column: number
  name: string | null
}

/**
 * The frames of each report (see reportedFrames), mapped through the source maps of its release:
 * one lookup per release in the batch, not per report.
 */
export async function symbolicateReports(
  reports: readonly ErrorReport[],
  lookupFor: (release: string | null, files: readonly FrameFile[]) => Promise<SourceMapLookup>,
): Promise<Frame[][]> {
  const reported = reports.map((report) => ({ release: report.release || null, frames: reportedFrames(report) }))
  const filesByRelease = new Map<string | null, ReportedFrame[]>()
  for (const { release, frames } of reported) {
    if (!filesByRelease.has(release)) filesByRelease.set(release, [])
    filesByRelease.get(release)!.push(...frames)
  }
  const lookups = new Map(await Promise.all([...filesByRelease].map(async ([release, files]) => [release, await lookupFor(release, files)] as const)))
  return reported.map(({ release, frames }) => symbolicate(frames, lookups.get(release)!))
}

/**
 * Maps each frame through its source map. The original function name is the one the original
 * source declares around the mapped position (see scope.ts); without `sourcesContent`, the name
 * the map gives at the caller's call site (the callee as the caller wrote it), else the reported
 * one, but neither when a minifier made it: a map made from minified code (terser after a bundler
 * that wrote no `names`) gives the first minifier's names, and those change with every build.
 */
export function symbolicate(frames: readonly ReportedFrame[], lookup: SourceMapLookup): Frame[] {
  const traced = frames.map((frame): Traced | null => {
    if (frame.lineno === null || frame.lineno < 1) return null
    const loaded = lookup({ filename: frame.filename, debugId: frame.debugId })
    if (!loaded) return null
    const position = originalPositionFor(loaded.map, { line: frame.lineno, column: lookupColumn(loaded.map, frame.lineno, frame.colno) })
    // Undefined, not null, when the mapping names a source index the map does not list (a broken build).
    if (position.source == null) return null
    // A name that is not text (an upload's `names` may hold anything) is no name.
    const name = typeof position.name === 'string' ? position.name : null
    return { loaded, source: position.source, line: position.line, column: position.column, name }
  })
  return frames.map((frame, i) => {
    const at = traced[i]
    if (!at) return { ...frame }
    const lines = at.loaded.sourceLines(at.source)
    const ignoreListed = at.loaded.isIgnored(at.source)
    // Dependencies' frames do not take part in grouping: their names are not worth a scan of their sources.
    const declared = isInApp(at.source) && !ignoreListed ? (scopesOf(at.loaded, at.source)?.nameAt(at.line, at.column) ?? null) : null
    const named = declared !== null ? { function: declared, functionFrom: 'source' as const } : nameWithoutSource(traced[i + 1]?.name, frame.function)
    // Cut as a reported frame is: a map's source and names may be megabytes long, and a report of a
    // few kilobytes would otherwise store them once per frame. A build machine's folders are no part
    // of it (see withoutBuildRoot).
    const source = sliceChars(at.loaded.sourceName(at.source), 0, MAX_FILENAME_CHARS)
    const mapped = { source, line: at.line, column: at.column + 1, ...named, function: sliceChars(named.function, 0, MAX_FUNCTION_CHARS) }
    return { ...frame, mapped: { ...mapped, sourcemap: at.loaded.name, ...(ignoreListed && { ignoreListed: true as const }), ...context(lines, at.line, at.column) } }
  })
}

/**
 * The 0-based column a frame is looked up at: stack columns are 1-based. A frame without one (a
 * Firefox eval frame, a stack that gives lines only) is taken at the first segment of its line that
 * maps code of its own: bundlers that keep indentation (Bun, esbuild) map column 0 of a line to where
 * the line before ended, and column 0 led such a frame to the statement before its own.
 */
function lookupColumn(map: TraceMap, line: number, colno: number | null): number {
  if (colno !== null) return Math.max(colno - 1, 0)
  const lines = decodedMappings(map)
  const before = lines[line - 2]?.at(-1)
  const carriesOn = (segment: readonly number[]) =>
    before !== undefined && before.length >= 4 && segment[1] === before[1] && segment[2] === before[2] && segment[3] === before[3]
  const own = lines[line - 1]?.find((segment) => segment.length >= 4 && !carriesOn(segment))
  return own ? own[0] : 0
}

/** A name a person wrote, from the caller's call site or else from the frame; '' when both are anonymous or minified. */
function nameWithoutSource(callSite: string | null | undefined, reported: string): Pick<MappedPosition, 'function' | 'functionFrom'> {
  const written = (name: string | null | undefined): name is string => !!name && normalizeFunction(name) !== '' && !looksMinifiedFunction(name)
  if (written(callSite)) return { function: callSite, functionFrom: 'call site' }
  if (written(reported)) return { function: reported, functionFrom: 'reported' }
  return { function: '' }
}

/** The function scopes of each original source, made once per parsed map and let go of with it. */
const scopes = new WeakMap<LoadedSourceMap, Map<string, FunctionScopes | null>>()

function scopesOf(loaded: LoadedSourceMap, source: string): FunctionScopes | null {
  let bySource = scopes.get(loaded)
  if (!bySource) scopes.set(loaded, (bySource = new Map()))
  if (!bySource.has(source)) {
    const text = loaded.sourceText(source)
    bySource.set(source, text ? functionScopes(text) : null)
  }
  return bySource.get(source)!
}

/**
 * The source lines around a mapped position. A line longer than CONTEXT_LINE_CHARS is cut to the
 * part around the position's column (`…` where it was cut): its start alone left out what failed
 * when the position lay further in (a vendored minified file, a long line of markup).
 */
function context(lines: readonly string[] | null, line: number, column: number): Pick<MappedPosition, 'preContext' | 'contextLine' | 'postContext'> {
  if (!lines || line > lines.length) return {}
  const cut = (text: string) => {
    if (text.length <= CONTEXT_LINE_CHARS) return text
    const start = Math.min(Math.max(column - CONTEXT_LINE_CHARS / 2, 0), text.length - CONTEXT_LINE_CHARS)
    const end = start + CONTEXT_LINE_CHARS
    return `${start > 0 ? '…' : ''}${sliceChars(text, start, end)}${end < text.length ? '…' : ''}`
  }
  return {
    preContext: lines.slice(Math.max(0, line - 1 - CONTEXT_LINES), line - 1).map(cut),
    contextLine: cut(lines[line - 1]),
    postContext: lines.slice(line, line + CONTEXT_LINES).map(cut),
  }
}
