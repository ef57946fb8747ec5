import { sql } from 'drizzle-orm'
import type { Sink } from '../../sink'
import { alreadyStoredOf, inStatements, insertedPerProject } from '../shared/insert'
import { sortedBy } from '../shared/rows'
import type { ReplayChunkRow } from './service'

const key = (r: ReplayChunkRow) => `${r.projectId}\n${r.sessionId}\n${r.windowId}\n${r.contentHash}`

/**
 * Replay chunks; a chunk already stored under the same session, window and content hash makes the row a
 * no-op, so a retried send is stored once. Multi-row VALUES rather than a JSON parameter: the data is
 * binary, and bound as bytea it is not re-encoded into JSON on the way.
 */
export const replayChunksSink: Sink<ReplayChunkRow> = {
  name: 'replay_chunks',
  async write(tx, rows) {
    const stored: { projectId: string; n: number }[] = []
    for (const run of inStatements(sortedBy(rows, key))) {
      const values = run.map(
        (r) => sql`(${r.projectId}::uuid, ${r.sessionId}, ${r.windowId}, ${r.contentHash}, ${r.seq}::int,
          to_timestamp(${r.firstTimestamp}::float8 / 1000), to_timestamp(${r.lastTimestamp}::float8 / 1000),
          ${r.eventCount}::int, ${r.hasFullSnapshot}::boolean, ${r.rawBytes}::int, ${r.data}::bytea)`,
      )
      const inserted = await insertedPerProject(tx, sql`
        insert into replay_chunks (project_id, session_id, window_id, content_hash, seq, first_timestamp, last_timestamp,
          event_count, has_full_snapshot, raw_bytes, data)
        values ${sql.join(values, sql`, `)}
        on conflict do nothing`)
      stored.push(...inserted)
    }
    return alreadyStoredOf(rows, stored)
  },
}
