import { AnyMap, decodedMappings, type TraceMap } from '@jridgewell/trace-mapping'
import { withoutBuildRoot } from './build-paths'

/** A stored source map, parsed, as symbolication uses it. */
export interface LoadedSourceMap {
  /** The stored name, reported with each frame it mapped. */
  name: string
  map: TraceMap
  /** One original source from `sourcesContent`. */
  sourceText(source: string): string | null
  /** Its lines, split once. */
  sourceLines(source: string): readonly string[] | null
  /** A source as frames store it: a `file://` one relative to the build's root (see withoutBuildRoot). */
  sourceName(source: string): string
  /** Whether the map lists the source as third-party code (`ignoreList`, or `x_google_ignoreList` before it). */
  isIgnored(source: string): boolean
  /** Roughly what it takes in memory once used: see memoryEstimate. */
  bytes: number
}

/**
 * Decoded, a mapping segment is an array of four or five numbers: about 60 bytes of heap where its
 * text took 5 or 6 (measured on the tracker's own maps: 11.4 to 11.6 bytes per character of
 * `mappings`, on top of the JSON). The sources' lines, once split for context, take about their text
 * again.
 */
const BYTES_PER_SEGMENT = 64

/**
 * What the cache keeps of parsed maps, at most. A map over it alone is never kept, and would be read
 * and decoded again for every report it maps (a tenth of a second for a few megabytes of `mappings`):
 * an upload refuses it (see parseSourceMap).
 */
export const MAX_PARSED_BYTES = 64 * 1024 * 1024

export function memoryEstimate(json: string, map: TraceMap): number {
  let segments = 0
  for (const line of decodedMappings(map)) segments += line.length
  // Strings only: an object's `length` may be anything, and a string one would turn the cache's count into text.
  const sources = map.sourcesContent?.reduce((n: number, text: unknown) => n + (typeof text === 'string' ? text.length : 0), 0) ?? 0
  return json.length + sources + segments * BYTES_PER_SEGMENT
}

export function loadSourceMap(name: string, json: string): LoadedSourceMap {
  const map = new AnyMap(json)
  const contents = new Map<string, string | null>()
  const split = new Map<string, readonly string[] | null>()
  // Text or nothing: the map is whatever was uploaded with the page's key, and a number or an
  // object here would fail every report it maps.
  map.resolvedSources.forEach((source, i) => {
    const text: unknown = map.sourcesContent?.[i]
    contents.set(source, typeof text === 'string' ? text : null)
  })
  // trace-mapping reads either name, and shifts a section's indexes; whatever else an upload put
  // there (a number, a text, an object) marks nothing.
  const listed: unknown = map.ignoreList
  const ignored = new Set(Array.isArray(listed) ? listed.filter((i) => Number.isSafeInteger(i)).map((i: number) => map.resolvedSources[i]) : [])
  const names = withoutBuildRoot(map.resolvedSources)
  return {
    name,
    map,
    bytes: memoryEstimate(json, map),
    sourceText: (source) => contents.get(source) ?? null,
    sourceName: (source) => names.get(source) ?? source,
    isIgnored: (source) => ignored.has(source),
    sourceLines(source) {
      if (!split.has(source)) split.set(source, contents.get(source)?.split(/\r?\n/) ?? null)
      return split.get(source) ?? null
    },
  }
}

export interface SourceMapCacheOptions {
  /** Bound on the memory the maps kept parsed take (their estimate: LoadedSourceMap's `bytes`). */
  maxBytes?: number
}

/**
 * Parsed source maps, least recently used first out, bounded by the memory they take. A map is
 * parsed once however many requests want it at the same moment. Keys carry the upload time, so a
 * map replaced by a new upload is simply never asked for again and ages out.
 */
export function createSourceMapCache({ maxBytes = MAX_PARSED_BYTES }: SourceMapCacheOptions = {}) {
  const entries = new Map<string, { loaded: LoadedSourceMap; bytes: number }>()
  const loading = new Map<string, Promise<LoadedSourceMap | null>>()
  let bytes = 0

  const remember = (key: string, loaded: LoadedSourceMap, size: number) => {
    if (size > maxBytes) return
    entries.set(key, { loaded, bytes: size })
    bytes += size
    for (const [oldest, entry] of entries) {
      if (bytes <= maxBytes) break
      entries.delete(oldest)
      bytes -= entry.bytes
    }
  }

  return {
    /** The parsed map under `key`, loading its JSON with `fetch` on a miss. */
    async get(key: string, name: string, fetch: () => Promise<string | null>): Promise<LoadedSourceMap | null> {
      const hit = entries.get(key)
      if (hit) {
        // Map keeps insertion order: re-inserting marks the entry most recently used.
        entries.delete(key)
        entries.set(key, hit)
        return hit.loaded
      }
      let pending = loading.get(key)
      if (!pending) {
        pending = fetch().then((json) => {
          if (json === null) return null
          const loaded = loadSourceMap(name, json)
          remember(key, loaded, loaded.bytes)
          return loaded
        })
        loading.set(key, pending)
        pending.then(
          () => loading.delete(key),
          () => loading.delete(key),
        )
      }
      return pending
    },
    stats: () => ({ entries: entries.size, bytes }),
  }
}

export type SourceMapCache = ReturnType<typeof createSourceMapCache>
