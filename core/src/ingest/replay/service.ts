import { ApiError } from '../../errors'
import type { Caller } from '../../http/auth'
import type { ClientFacts } from '../sessions/client'
import type { EndUserTouch, SessionTouch } from '../sessions/service'
import { clampTimestamp, stripNul } from '../shared/values'
import type { ReplayBody } from './model'

/** rrweb's event types: 0 DomContentLoaded, 1 Load, 2 FullSnapshot, 3 IncrementalSnapshot, 4 Meta, 5 Custom, 6 Plugin. */
const FULL_SNAPSHOT = 2
const META = 4
const MAX_EVENT_TYPE = 6

export interface RrwebEvent {
  type: number
  timestamp: number
  data: unknown
}

export function isRrwebEvent(value: unknown): value is RrwebEvent {
  if (typeof value !== 'object' || value === null) return false
  const { type, timestamp, data } = value as Partial<RrwebEvent>
  return (
    Number.isInteger(type) && type! >= 0 && type! <= MAX_EVENT_TYPE && typeof timestamp === 'number' && Number.isFinite(timestamp) && timestamp >= 0 && data !== undefined
  )
}

/** What the chunk says about itself; the events are stored as they came, in the order they came. */
export interface ReplayChunk {
  events: RrwebEvent[]
  /** Type and timestamp of each kept event, in order: what identifies the chunk (see `timelineHash`). */
  timeline: Float64Array
  dropped: number
  firstTimestamp: number
  lastTimestamp: number
  hasFullSnapshot: boolean
  /** `href` of the first meta event: the page the recording starts on. */
  entryUrl: string | null
}

const MAX_EVENTS = 100_000

/** The body's `events`, which must be an array (see the model). */
export function eventsOf(events: unknown): unknown[] {
  if (!Array.isArray(events)) throw new ApiError('validation_failed', '/events: Expected array', { path: '/events' })
  if (events.length > MAX_EVENTS) throw new ApiError('validation_failed', `/events: Expected at most ${MAX_EVENTS} items`, { path: '/events' })
  return events
}

/** Keeps the valid rrweb events of a chunk and reads what the session needs from them. */
export function readChunk(items: readonly unknown[]): ReplayChunk {
  const events: RrwebEvent[] = []
  const timeline = new Float64Array(items.length * 2)
  let first = Infinity
  let last = -Infinity
  let hasFullSnapshot = false
  let entryUrl: string | null = null
  let entryAt = Infinity
  for (const item of items) {
    if (!isRrwebEvent(item)) continue
    timeline[events.length * 2] = item.type
    timeline[events.length * 2 + 1] = item.timestamp
    events.push(item)
    if (item.timestamp < first) first = item.timestamp
    if (item.timestamp > last) last = item.timestamp
    if (item.type === FULL_SNAPSHOT) hasFullSnapshot = true
    if (item.type === META && item.timestamp < entryAt) {
      const href = (item.data as { href?: unknown } | null)?.href
      if (typeof href === 'string' && href !== '') {
        entryUrl = href
        entryAt = item.timestamp
      }
    }
  }
  return { events, timeline: timeline.subarray(0, events.length * 2), dropped: items.length - events.length, firstTimestamp: first, lastTimestamp: last, hasFullSnapshot, entryUrl }
}

export interface ReplayChunkRow {
  projectId: string
  sessionId: string
  windowId: string
  contentHash: string
  seq: number | null
  firstTimestamp: number
  lastTimestamp: number
  eventCount: number
  hasFullSnapshot: boolean
  rawBytes: number
  data: Uint8Array
}

/**
 * The JSON a chunk is stored as: the body as it came when it can be (every event kept, no key in it),
 * else the body re-encoded with only its valid events and without the key.
 */
export function storedJson(body: ReplayBody, chunk: ReplayChunk, raw: Uint8Array | undefined): Uint8Array {
  if (raw && chunk.dropped === 0 && body.apiKey === undefined) return raw
  const { apiKey: _key, ...rest } = body
  return Buffer.from(JSON.stringify({ ...rest, events: chunk.events }))
}

/** The encoded chunk, as `encodeChunk` in the route makes it. */
export interface EncodedChunk {
  contentHash: string
  rawBytes: number
  data: Uint8Array
}

export interface ReplayRows {
  chunks: ReplayChunkRow[]
  sessions: SessionTouch[]
  endUsers: EndUserTouch[]
}

const MAX_TEXT = 2048
const shortText = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? stripNul(value.slice(0, MAX_TEXT)) : null)

/**
 * The rows one `/events` request stores: the chunk (when it kept any event) and what it tells of the
 * session and end user. Client times more than a day ahead are clamped for the columns; the events
 * themselves are stored untouched, so that they replay as recorded.
 */
export function replayRows(body: ReplayBody, chunk: ReplayChunk, encoded: EncodedChunk | null, caller: Caller, client: ClientFacts, receivedAt: number): ReplayRows {
  const endUserId = body.endUserId ?? null
  const windowId = body.windowId ?? ''
  const kept = chunk.events.length > 0
  const firstAt = kept ? clampTimestamp(chunk.firstTimestamp, receivedAt) : receivedAt
  const lastAt = kept ? clampTimestamp(chunk.lastTimestamp, receivedAt) : receivedAt
  const properties = body.automaticProperties ?? null
  const session: SessionTouch = {
    projectId: caller.projectId,
    sessionId: body.sessionId,
    environment: caller.environment,
    endUserId,
    firstAt: Math.min(firstAt, lastAt),
    lastAt: Math.max(firstAt, lastAt),
    entryUrl: chunk.entryUrl ? shortText(chunk.entryUrl) : null,
    referrer: shortText(properties?.referrer),
    ...client.userAgent,
    automaticProperties: properties,
    windowIds: body.windowId ? [body.windowId] : [],
    geo: client.geo,
    sdkVersion: shortText(body.sdkVersion),
  }
  return {
    chunks:
      kept && encoded
        ? [
            {
              projectId: caller.projectId,
              sessionId: body.sessionId,
              windowId,
              contentHash: encoded.contentHash,
              seq: body.seq ?? null,
              firstTimestamp: session.firstAt,
              lastTimestamp: session.lastAt,
              eventCount: chunk.events.length,
              hasFullSnapshot: chunk.hasFullSnapshot,
              rawBytes: encoded.rawBytes,
              data: encoded.data,
            },
          ]
        : [],
    sessions: [session],
    endUsers: endUserId ? [{ projectId: caller.projectId, endUserId, at: session.lastAt, geo: session.geo }] : [],
  }
}
