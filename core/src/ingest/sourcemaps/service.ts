import { AnyMap, type TraceMap } from '@jridgewell/trace-mapping'
import { ApiError } from '../../errors'
import { storedText } from '../shared/values'
import { MAX_PARSED_BYTES, memoryEstimate } from './cache'

/** One file of an upload, as text: a source map, or the minified script it belongs to. */
export interface UploadedFile {
  name: string
  url?: string | null
  content: string | Record<string, unknown>
  /** Where the file was in the request, for error messages: `/files/2/content`, `/app.js.map`. */
  path?: string
}

/** A source map ready to be stored. */
export interface SourceMapUpload {
  name: string
  /** The served (generated) file this map belongs to, when known: a URL, `~/path`, or a path. */
  url: string | null
  debugId: string | null
  /** The map as JSON text. */
  json: string
}

const SCRIPT = /\.(?:m|c)?js$/i

const invalid = (message: string, path = '/files') => new ApiError('validation_failed', message, { path })

/**
 * `./dist\\app.js.map` -> `dist/app.js.map`: names are paths with forward slashes, nothing leading,
 * and as stored (see storedText): two names of an upload stored as one are one map of its commit too.
 */
export function cleanName(name: string): string {
  return storedText(name)
    .replaceAll('\\', '/')
    .replace(/[\u0000-\u001f]/g, '')
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/')
}

/** Debug ids are UUIDs, written with or without dashes and in either case; compared as 32 lowercase hex. */
export function normalizeDebugId(id: unknown): string | null {
  if (typeof id !== 'string') return null
  const hex = id.replaceAll('-', '').toLowerCase()
  return /^[0-9a-f]{32}$/.test(hex) ? hex : null
}

/**
 * A map's JSON without what may come before it: a byte order mark, and the `)]}'` line that the
 * source map spec allows servers to prepend against cross-site script inclusion. Stored so, because
 * the JSON parser that reads a stored map takes neither.
 */
export const sourceMapJsonText = (content: string): string => content.replace(/^\uFEFF?(?:\)\]\}'[^\n]*\n)?/, '')

/**
 * Whether a text is a source map's JSON (an object of version 3). A script never is (a block that
 * starts it is not JSON); most are told by their first character, the others where JSON.parse stops.
 */
function isSourceMapText(content: string): boolean {
  const json = sourceMapJsonText(content).trimStart()
  if (!json.startsWith('{')) return false
  try {
    return (JSON.parse(json) as { version?: unknown } | null)?.version === 3
  } catch {
    return false
  }
}

/** The parsed map, if `content` is a source map (version 3, plain or indexed); else a 400 naming the file. */
export function parseSourceMap(name: string, content: string | Record<string, unknown>, path = '/files'): Record<string, unknown> {
  let map: unknown = content
  if (typeof content === 'string') {
    try {
      map = JSON.parse(sourceMapJsonText(content))
    } catch {
      throw invalid(`${name}: not valid JSON`, path)
    }
  }
  const m = map as Record<string, unknown>
  const plain = Array.isArray(m?.sources) && typeof m?.mappings === 'string'
  const indexed = Array.isArray(m?.sections)
  if (!m || typeof m !== 'object' || m.version !== 3 || !(plain || indexed)) {
    throw invalid(`${name}: not a source map (expected version 3 with "sources" and "mappings", or "sections")`, path)
  }
  const unreadable = () => invalid(`${name}: the source map could not be read`, path)
  let lines: number
  try {
    lines = generatedLines(m)
  } catch {
    throw unreadable()
  }
  if (lines > MAX_GENERATED_LINES) throw invalid(`${name}: the source map describes more than ${MAX_GENERATED_LINES} lines of generated code`, path)
  let parsed: TraceMap
  let size: number
  try {
    parsed = new AnyMap(m as never) // throws on what trace-mapping cannot read
    size = memoryEstimate(typeof content === 'string' ? content : JSON.stringify(m), parsed)
  } catch {
    throw unreadable()
  }
  if (size > MAX_PARSED_BYTES) {
    throw invalid(`${name}: the source map would take about ${Math.ceil(size / 2 ** 20)} MB to keep parsed, more than ${MAX_PARSED_BYTES / 2 ** 20} MB`, path)
  }
  return m
}

/**
 * Reading a map, trace-mapping keeps an array for every line of the generated file up to the last
 * one mapped (some 80 bytes each), however small the map: a 200-byte indexed map with one section at
 * line 50,000,000 took 4 GB to read. A browser's script has nowhere near this many lines.
 */
export const MAX_GENERATED_LINES = 1_000_000

/**
 * How many lines of generated code a map reaches: a plain map's `mappings` has one per `;`, an
 * indexed map's sections start at their offsets. Throws on an offset that is not a line number.
 */
function generatedLines(map: Record<string, unknown>): number {
  if (!Array.isArray(map.sections)) return typeof map.mappings === 'string' ? countOf(map.mappings, ';') + 1 : 0
  let lines = 0
  for (const section of map.sections as { offset?: { line?: unknown }; map?: unknown }[]) {
    const offset = section?.offset?.line
    if (!Number.isSafeInteger(offset) || (offset as number) < 0) throw new TypeError('a section offset is not a line number')
    const inner = typeof section.map === 'string' ? JSON.parse(section.map) : section.map
    lines = Math.max(lines, (offset as number) + (inner && typeof inner === 'object' ? generatedLines(inner) : 0))
  }
  return lines
}

function countOf(text: string, char: string): number {
  let n = 0
  for (let at = text.indexOf(char); at !== -1; at = text.indexOf(char, at + 1)) n++
  return n
}

const dirOf = (name: string) => (name.includes('/') ? name.slice(0, name.lastIndexOf('/') + 1) : '')

/**
 * The last `//# name=value` comment of a script (sourceMappingURL, debugId). Blanks around it are
 * spaces and tabs only: `\s` matches line breaks too, so `^\s*` tried from every line start ran
 * to the end of a run of empty lines and back, quadratic in it (150 KB of them held core for 20 s).
 */
const scriptComment = (script: string, name: string): string | null => {
  const matches = [...script.matchAll(new RegExp(`^[ \\t]*//[#@][ \\t]*${name}=(\\S+)[ \\t]*$`, 'gm'))]
  return matches.at(-1)?.[1] ?? null
}

/**
 * Where a script's `sourceMappingURL` points, resolved against the script's folder (`../maps/a.js.map`
 * beside `pages/a.js` is `maps/a.js.map`), without query. An absolute URL or path
 * (`https://cdn.example/static/a.js.map`, `/static/a.js.map`) says where the map is served, which may
 * lie under a prefix the upload's names do not have: `served`, and it links the map whose name it
 * ends in. Without a comment, or with an inline `data:` map, the map is `<script>.map`.
 */
function mapPathOf(script: string, mapUrl: string | null): { path: string; served: boolean } {
  if (!mapUrl || mapUrl.startsWith('data:')) return { path: `${script}.map`, served: false }
  let url = stripQuery(mapUrl)
  try {
    url = decodeURI(url)
  } catch {}
  if (/^(?:[a-z][a-z0-9+.-]*:|\/)/i.test(url)) return { path: pathOf(url), served: true }
  // `..` climbs out of the script's folder; one that climbs above the upload's names is kept, as cleanName keeps it.
  const segments: string[] = []
  for (const segment of cleanName(dirOf(script) + url).split('/')) {
    if (segment === '..' && segments.length > 0 && segments.at(-1) !== '..') segments.pop()
    else segments.push(segment)
  }
  return { path: segments.join('/'), served: false }
}

/**
 * The maps of an upload, each validated and told which served file it belongs to: the URL given
 * with it, else the script uploaded beside it (by its `sourceMappingURL` comment or by the name
 * `<script>.map`), else the map's own `file` field. A script lends its `debugId` to a map that has
 * none. Scripts themselves are not stored. Any invalid map fails the whole upload.
 */
export function sourceMapUploads(files: readonly UploadedFile[]): SourceMapUpload[] {
  // One test per file: `scripts.includes` for each was quadratic in an upload of many small scripts.
  // The content decides, not the name alone: WIRE.md's JSON form holds maps only, and a map named
  // after the script it maps (`app.js`) was otherwise set aside as a script, unstored, under a 200.
  const isScript = (f: UploadedFile) => SCRIPT.test(f.name) && typeof f.content === 'string' && !isSourceMapText(f.content)
  const scripts: UploadedFile[] = []
  const maps: UploadedFile[] = []
  for (const file of files) (isScript(file) ? scripts : maps).push(file)
  if (maps.length === 0) throw invalid('the upload holds no source map')
  type Link = { script: string; debugId: string | null }
  const linked = new Map<string, Link>()
  // Served paths that absolute sourceMappingURLs name, by file name (see mapPathOf).
  const linkedByServedPath = new Map<string, { path: string; link: Link }[]>()
  for (const script of scripts) {
    const name = cleanName(script.name)
    const link = { script: name, debugId: normalizeDebugId(scriptComment(script.content as string, 'debugId')) }
    const mapPath = mapPathOf(name, scriptComment(script.content as string, 'sourceMappingURL'))
    if (!mapPath.served) linked.set(mapPath.path, link)
    else linkedByServedPath.set(baseOf(mapPath.path), [...(linkedByServedPath.get(baseOf(mapPath.path)) ?? []), { path: mapPath.path, link }])
  }
  const linkOf = (name: string) => linked.get(name) ?? linkedByServedPath.get(baseOf(name))?.find(({ path }) => path.endsWith(`/${name}`))?.link
  return maps.map((file) => {
    const name = cleanName(file.name)
    if (name === '') throw invalid('a file has no name', file.path)
    const map = parseSourceMap(name, file.content, file.path)
    const script = linkOf(name)
    const generated = typeof map.file === 'string' && map.file !== '' ? cleanName(dirOf(name) + map.file) : null
    // As stored, as the name is: Postgres text cannot hold NUL, and refused there it would cost the
    // commit of every request beside this one a retry; a URL of NUL alone is none.
    const url = file.url ? storedText(file.url) || null : null
    return {
      name,
      url: url ?? script?.script ?? generated,
      debugId: normalizeDebugId(map.debugId ?? map.debug_id) ?? script?.debugId ?? null,
      json: typeof file.content === 'string' ? sourceMapJsonText(file.content) : JSON.stringify(file.content),
    }
  })
}

/** A stored map as matching sees it. */
export interface SourceMapCandidate {
  release: string
  name: string
  url: string | null
  debugId: string | null
}

/**
 * A URL without its query and fragment. By hand: /[?#].*$/ stops at a line break and fails, and is
 * tried again from the next `?`, quadratic in them (a frame's file of 4 KB took 24 ms).
 */
export function stripQuery(url: string): string {
  const end = url.search(/[?#]/)
  return end === -1 ? url : url.slice(0, end)
}
const pathOf = (url: string) => stripQuery(url).replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').replace(/^file:/i, '')
const baseOf = (path: string) => path.slice(path.lastIndexOf('/') + 1)

/** A served file's path as matching compares it: `~/` (the site's root) written as `/`. */
const servedPathOf = (served: string) => pathOf(served).replace(/^~\//, '/')

/**
 * How well a frame's file (`url` without query, and its `path`) matches a served file: the same URL,
 * the same path (`~/` or `/` prefixed), the path ending in the served file's path, or the same file
 * name; 0 for none. Every match is of the same file name. Of paths the frame's ends in, the longer
 * is the closer (between 2 and 3): `/widgets/app.js` is `widgets/app.js`, not the root's `app.js`.
 */
function matchScore(served: string, url: string, path: string): number {
  const servedPath = servedPathOf(served)
  const relative = servedPath.replace(/^\//, '')
  return served === url ? 4
    : servedPath.startsWith('/') && servedPath === path ? 3
    : path.endsWith(`/${relative}`) ? 2 + relative.length / path.length
    : baseOf(servedPath) === baseOf(path) ? 1
    : 0
}

/**
 * A frame's file as browsers write it in a stack, percent-encoded (`assets/%C3%9Cber%20uns.js`), and
 * decoded, as the build named it on disk and its map was uploaded (`assets/Über uns.js`). Both are
 * tried: a URL given with a map may be encoded too. `decodeURI` keeps `/`, `?` and `#` escaped, so
 * the path keeps its segments; a malformed escape leaves the file as it came.
 */
function frameFileForms(filename: string): string[] {
  // As stored, as the names and URLs of uploads are (see cleanName): a lone surrogate is U+FFFD there.
  const url = storedText(stripQuery(filename))
  let decoded = url
  try {
    decoded = decodeURI(url)
  } catch {}
  return decoded === url ? [url] : [url, decoded]
}

/** The two names a map gives its served file: its own name without `.map`, and its URL. */
const servedNames = (candidate: SourceMapCandidate) => [stripQuery(candidate.name).replace(/\.map$/i, ''), ...(candidate.url ? [candidate.url] : [])]

/**
 * Picks the map for a frame's file: by debug id first; else, among the maps of the frame's release,
 * the one whose served file matches the frame's URL best. A map names its served file twice, by the
 * URL or `file` it came with and by its own name (`app.js.map` for `app.js`); when the two disagree
 * (a script renamed after the build, a `file` left over from an earlier step), either may be the
 * one browsers load. The candidates are indexed by file name, which every match shares: a release
 * may hold thousands of maps, and scoring each against each frame took 30 s for one report batch.
 */
export function sourceMapPicker<C extends SourceMapCandidate>(candidates: readonly C[]) {
  const byDebugId = new Map<string, C>()
  const byFileName = new Map<string, C[]>()
  for (const candidate of candidates) {
    if (candidate.debugId && !byDebugId.has(candidate.debugId)) byDebugId.set(candidate.debugId, candidate)
    for (const name of new Set(servedNames(candidate).map((served) => baseOf(servedPathOf(served))))) {
      const named = byFileName.get(name)
      if (named) named.push(candidate)
      else byFileName.set(name, [candidate])
    }
  }
  return (filename: string, release: string | null, debugId: string | null): C | undefined => {
    const byId = debugId ? byDebugId.get(debugId) : undefined
    if (byId || !release) return byId
    let best: C | undefined
    let bestScore = 0
    for (const url of frameFileForms(filename)) {
      const path = pathOf(url)
      for (const candidate of byFileName.get(baseOf(path)) ?? []) {
        if (candidate.release !== release) continue
        const score = Math.max(...servedNames(candidate).map((served) => matchScore(served, url, path)))
        if (score > bestScore) [best, bestScore] = [candidate, score]
      }
    }
    return best
  }
}
