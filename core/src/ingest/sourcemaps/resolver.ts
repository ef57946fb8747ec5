import { errorText, type Database } from '../../db'
import { ApiError } from '../../errors'
import type { Logger } from '../../log'
import { storedText } from '../shared/values'
import { readOrUnavailable } from '../shared/write'
import { createSourceMapCache, type LoadedSourceMap, type SourceMapCache } from './cache'
import { sourceMapPicker } from './service'
import { sourceMapJson, storedSourceMaps } from './store'

/** A frame's file and, when the client knew it, the debug id of the script it ran in. */
export interface FrameFile {
  filename: string
  debugId: string | null
}

export type SourceMapLookup = (file: FrameFile) => LoadedSourceMap | undefined

/**
 * Finds and loads the source maps for a report's frames: one query for what is stored for the
 * release, then each map that matches from the cache, or from the database once.
 */
export function createSourceMapResolver(db: Database, log: Logger, cache: SourceMapCache = createSourceMapCache()) {
  return {
    async lookupFor(projectId: string, reported: string | null, files: readonly FrameFile[]): Promise<SourceMapLookup> {
      // Maps are stored under their release as stored text (see sourceMapRows): compared, read and
      // cached under that form, a release a browser cut inside an emoji finds them too.
      const release = reported === null ? null : storedText(reported)
      const debugIds = [...new Set(files.flatMap((f) => (f.debugId ? [f.debugId] : [])))]
      if (files.length === 0 || (!release && debugIds.length === 0)) return () => undefined
      const stored = await readOrUnavailable(storedSourceMaps(db, projectId, release, debugIds), log)
      if (stored.length === 0) return () => undefined
      const pick = sourceMapPicker(stored)
      const keyOf = (f: FrameFile) => `${f.debugId ?? ''}\n${f.filename}`
      const loaded = new Map<string, LoadedSourceMap>()
      await Promise.all(
        [...new Map(files.map((f) => [keyOf(f), f])).values()].map(async (file) => {
          const match = pick(file.filename, release, file.debugId)
          if (!match) return
          const key = `${projectId}\n${match.release}\n${match.name}\n${match.version}`
          try {
            const map = await cache.get(key, match.name, () => readOrUnavailable(sourceMapJson(db, projectId, match), log))
            if (map) loaded.set(keyOf(file), map)
          } catch (error) {
            // Storage trouble fails the request (503, retried later): storing the report unmapped
            // would group it apart from its Issue. A map that cannot be parsed leaves its frames as
            // they came; the report is still stored.
            if (error instanceof ApiError) throw error
            log.warn('source map not usable', { release: match.release, name: match.name, error: errorText(error) })
          }
        }),
      )
      return (file) => loaded.get(keyOf(file))
    },
  }
}

export type SourceMapResolver = ReturnType<typeof createSourceMapResolver>
