import { AnyMap, type TraceMap } from '@jridgewell/trace-mapping'

/** A stored source map, parsed, as symbolication uses it. */
export interface LoadedSourceMap {
  /** The stored name, reported with each frame it mapped. */
  name: string
  map: TraceMap
  /** One original source from `sourcesContent`. */
  sourceText(source: string): string | null
  /** Its lines, split once. */
  sourceLines(source: string): readonly string[] | null
}

export function loadSourceMap(name: string, json: string): LoadedSourceMap {
  const map = new AnyMap(json)
  const contents = new Map<string, string | null>()
  const split = new Map<string, readonly string[] | null>()
  map.resolvedSources.forEach((source, i) => contents.set(source, map.sourcesContent?.[i] ?? null))
  return {
    name,
    map,
    sourceText: (source) => contents.get(source) ?? null,
    sourceLines(source) {
      if (!split.has(source)) split.set(source, contents.get(source)?.split(/\r?\n/) ?? null)
      return split.get(source) ?? null
    },
  }
}

export interface SourceMapCacheOptions {
  /** Bound on the JSON bytes of the maps kept parsed; parsed maps take a few times that in memory. */
  maxBytes?: number
}

/**
 * Parsed source maps, least recently used first out, bounded by the size of their JSON. A map is
 * parsed once however many requests want it at the same moment. Keys carry the upload time, so a
 * map replaced by a new upload is simply never asked for again and ages out.
 */
export function createSourceMapCache({ maxBytes = 64 * 1024 * 1024 }: SourceMapCacheOptions = {}) {
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
          remember(key, loaded, json.length)
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
