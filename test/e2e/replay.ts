import { sql } from 'drizzle-orm'
import { decodeChunk } from '@sightline/core/ingest/replay/encode'
import type { E2eCore } from '../tracker/helpers/e2e'

/**
 * What a dashboard plays a session back from: core's chunks of it, decompressed and ordered by
 * (window, seq, first event time: the pieces of a chunk cut for size share its seq), and what an rrweb
 * player needs of them. Every problem found is a line of the result
 * (none: the replay plays).
 */

interface Event {
  type: number
  timestamp: number
  data: any
}

interface StoredChunk {
  window_id: string
  seq: number | null
  first_ms: string
  last_ms: string
  event_count: number
  has_full_snapshot: boolean
  data: Uint8Array
}

const META = 4
const FULL_SNAPSHOT = 2
const INCREMENTAL = 3
/**
 * rrweb's IncrementalSource values whose data name a node by `id`. Not mouse and touch moves: rrweb
 * buffers their positions and emits them later, when a node they name may be gone (the player then
 * only moves its cursor).
 */
const BY_ID = [2, 3, 5, 7, 9, 15]

export interface SessionReplay {
  /** Per window, its events in (seq, first event time) order. */
  windows: Map<string, Event[]>
  problems: string[]
}

/** The node ids a window's player knows at each point: a full snapshot's tree, then what mutations add and remove. */
class Nodes {
  #children = new Map<number, number[]>()

  reset(root: any) {
    this.#children.clear()
    this.#add(root)
  }

  has = (id: number) => this.#children.has(id)

  #add(node: any) {
    this.#children.set(node.id, [])
    for (const child of node.childNodes ?? []) {
      this.#add(child)
      this.#children.get(node.id)!.push(child.id)
    }
  }

  add(parentId: number, node: any) {
    this.#add(node)
    this.#children.get(parentId)?.push(node.id)
  }

  remove(id: number) {
    for (const child of this.#children.get(id) ?? []) this.remove(child)
    this.#children.delete(id)
  }
}

/** Checks one window's stream; `where` names it in the problems. */
function checkWindow(where: string, events: Event[], problems: string[]) {
  const say = (i: number, what: string) => problems.length < 50 && problems.push(`${where} event ${i} (type ${events[i]?.type}): ${what}`)
  if (events[0]?.type !== META) say(0, 'the window does not start with a meta event')
  if (events[1]?.type !== FULL_SNAPSHOT) say(1, 'the meta event is not followed by a full snapshot')
  const nodes = new Nodes()
  let snapshot = false
  const seen = new Set<string>()
  events.forEach((event, i) => {
    const json = JSON.stringify(event)
    if (seen.has(json)) say(i, 'a duplicate of an earlier event')
    seen.add(json)
    if (i > 0 && event.timestamp < events[i - 1].timestamp) say(i, `timestamp ${event.timestamp} before the previous ${events[i - 1].timestamp}`)
    if (event.type === META && events[i + 1]?.type !== FULL_SNAPSHOT) say(i, 'a meta event not followed by a full snapshot')
    if (event.type === FULL_SNAPSHOT) {
      snapshot = true
      nodes.reset(event.data.node)
      return
    }
    if (event.type !== INCREMENTAL) return
    if (!snapshot) return say(i, 'an incremental event before any full snapshot')
    const d = event.data
    const known = (id: number, what: string) => nodes.has(id) || say(i, `${what} names node ${id}, which no snapshot or mutation made`)
    if (d.source === 0) {
      for (const r of d.removes) {
        known(r.parentId, 'a removal\'s parent')
        nodes.remove(r.id)
      }
      // Adds may come before their parent's add in the list (rrweb's player retries those).
      const pending = [...d.adds]
      for (let progress = true; pending.length && progress; ) {
        progress = false
        for (let k = 0; k < pending.length; k++) {
          if (!nodes.has(pending[k].parentId)) continue
          nodes.add(pending[k].parentId, pending[k].node)
          pending.splice(k--, 1)
          progress = true
        }
      }
      for (const a of pending) known(a.parentId, 'an add\'s parent')
      for (const a of d.adds) if (a.nextId != null) known(a.nextId, 'an add\'s next sibling')
      for (const t of d.texts) known(t.id, 'a text change')
      for (const a of d.attributes) known(a.id, 'an attribute change')
    } else if (BY_ID.includes(d.source)) known(d.id, `source ${d.source}`)
  })
}

/** A session's replay as core stored it, checked. */
export async function storedReplay(e2e: E2eCore, sessionId: string): Promise<SessionReplay> {
  const ms = (column: string) => sql.raw(`round(extract(epoch from ${column}) * 1000)::bigint::text`)
  const chunks = await e2e.rows<StoredChunk>(
    sql`select window_id, seq, ${ms('first_timestamp')} as first_ms, ${ms('last_timestamp')} as last_ms, event_count, has_full_snapshot, data
        from replay_chunks where session_id = ${sessionId} order by window_id, seq, first_timestamp, last_timestamp`,
  )
  const problems: string[] = []
  const windows = new Map<string, Event[]>()
  for (const chunk of chunks) {
    const events = decodeChunk(chunk.data) as Event[]
    const where = `window ${chunk.window_id} seq ${chunk.seq}`
    const times = events.map((e) => e.timestamp)
    const facts = { event_count: events.length, has_full_snapshot: events.some((e) => e.type === FULL_SNAPSHOT), first_ms: String(Math.round(Math.min(...times))), last_ms: String(Math.round(Math.max(...times))) }
    const stored = { event_count: chunk.event_count, has_full_snapshot: chunk.has_full_snapshot, first_ms: chunk.first_ms, last_ms: chunk.last_ms }
    if (JSON.stringify(facts) !== JSON.stringify(stored)) problems.push(`${where}: stored ${JSON.stringify(stored)}, events say ${JSON.stringify(facts)}`)
    windows.set(chunk.window_id, [...(windows.get(chunk.window_id) ?? []), ...events])
  }
  for (const [window, events] of windows) checkWindow(`session ${sessionId} window ${window}`, events, problems)
  return { windows, problems }
}
