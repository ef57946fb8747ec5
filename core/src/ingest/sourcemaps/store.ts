import { sql } from 'drizzle-orm'
import type { Database } from '../../db'
import type { Sink } from '../../sink'
import { inStatements } from '../shared/insert'
import { sortedBy } from '../shared/rows'
import { jsonParam, storedText } from '../shared/values'
import type { SourceMapCandidate, SourceMapUpload } from './service'

export interface SourceMapRow {
  projectId: string
  release: string
  name: string
  url: string | null
  debugId: string | null
  /** The map's JSON, zstd-compressed. */
  content: Uint8Array
  sizeBytes: number
}

/** The stored form: JSON text, zstd-compressed (source maps shrink five- to tenfold). */
export async function sourceMapRows(projectId: string, release: string, uploads: readonly SourceMapUpload[]): Promise<SourceMapRow[]> {
  // As stored (see storedText): uploads of releases stored as one are one release of their commit too.
  const storedRelease = storedText(release)
  return Promise.all(
    uploads.map(async (upload) => {
      const json = Buffer.from(upload.json)
      return {
        projectId,
        release: storedRelease,
        name: upload.name,
        url: upload.url,
        debugId: upload.debugId,
        content: await Bun.zstdCompress(json, { level: 6 }),
        sizeBytes: json.byteLength,
      }
    }),
  )
}

/** Uploads replace what was stored under the same (release, name); the latest upload wins. */
export const sourceMapsSink: Sink<SourceMapRow> = {
  name: 'sourcemaps',
  async write(tx, rows) {
    const latest = sortedBy(rows, (r) => `${r.projectId}\n${r.release}\n${r.name}`, { lastWins: true })
    // One multipart upload may hold tens of thousands of small maps: bound in one statement, they
    // failed the commit, and with it every request's writes for a while after.
    for (const run of inStatements(latest)) {
      const values = run.map(
        (r) => sql`(${r.projectId}::uuid, ${r.release}, ${r.name}, ${r.url}, ${r.debugId}, ${r.content}::bytea, ${r.sizeBytes}::int, now())`,
      )
      await tx.execute(sql`
        insert into sourcemaps (project_id, release, name, url, debug_id, content, size_bytes, uploaded_at)
        values ${sql.join(values, sql`, `)}
        on conflict (project_id, release, name) do update set
          url = excluded.url, debug_id = excluded.debug_id, content = excluded.content,
          size_bytes = excluded.size_bytes, uploaded_at = excluded.uploaded_at`)
    }
  },
}

export interface StoredSourceMap extends SourceMapCandidate {
  /** Changes with every upload under the same name: part of the cache key. */
  version: string
}

/**
 * A stored row's version: the transaction that wrote it, and when. The time alone is not enough:
 * PGlite's clock counts milliseconds, and a replacement committed within the same one kept the old
 * key, so every core that had parsed the old map went on serving it. No two transactions share an
 * id, and the time tells an id apart from its reuse after wraparound.
 */
const VERSION = sql.raw(`xmin::text || '.' || (extract(epoch from uploaded_at) * 1000000)::bigint::text`)

/**
 * What could map a report's frames: the maps of its release, and those carrying one of its debug ids.
 * The ids as an array (`= any`), so that each side of the `or` takes its index: as `in (select ...)`,
 * a subquery Postgres cannot split an `or` around, every project's maps were scanned.
 */
export async function storedSourceMaps(db: Database, projectId: string, release: string | null, debugIds: readonly string[]): Promise<StoredSourceMap[]> {
  return db.rows<StoredSourceMap>(sql`
    select release, name, url, debug_id as "debugId", ${VERSION} as version
    from sourcemaps
    where project_id = ${projectId}
      and (release = ${release ?? ''} or debug_id = any(array(select json_array_elements_text(${jsonParam(debugIds)}::json))))`)
}

/** A stored map's JSON; null if it was replaced or removed meanwhile. */
export async function sourceMapJson(db: Database, projectId: string, map: StoredSourceMap): Promise<string | null> {
  const [row] = await db.rows<{ content: Uint8Array }>(sql`
    select content from sourcemaps
    where project_id = ${projectId} and release = ${map.release} and name = ${map.name}
      and ${VERSION} = ${map.version}`)
  return row ? new TextDecoder().decode(Bun.zstdDecompressSync(row.content)) : null
}
