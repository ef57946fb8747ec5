import { ApiError } from '../../errors'
import type { Caller } from '../../http/auth'
import { parseJson } from '../../http/json'
import type { ClientFacts } from '../sessions/client'
import type { EndUserTouch, SessionTouch } from '../sessions/service'
import { endUserTouches, type SessionTouches } from '../sessions/touch'
import { sessionText } from '../shared/text'
import { clampTimestamp } from '../shared/values'
import type { ReplayBody } from './model'
import { HAS_DATA, IS_OBJECT, JsonSyntaxError, scanReplayBody, type ScannedBody, type ScannedEvents } from './scan'

/** rrweb's event types: 0 DomContentLoaded, 1 Load, 2 FullSnapshot, 3 IncrementalSnapshot, 4 Meta, 5 Custom, 6 Plugin. */
const FULL_SNAPSHOT = 2
const META = 4
const MAX_EVENT_TYPE = 6
export const MAX_EVENTS = 100_000

/**
 * An `/events` body scanned (see scan.ts), or, when it is JSON but not an object, parsed, for the
 * route's validation to say what is wrong with it. Past `MAX_EVENTS` items only the count is kept.
 */
export function scanBody(bytes: Uint8Array): ScannedBody | { fields: unknown; events: undefined } {
  if (bytes.byteLength === 0) return { fields: parseJson(bytes), events: undefined }
  try {
    return scanReplayBody(bytes, MAX_EVENTS + 1) ?? { fields: parseJson(bytes), events: undefined }
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new ApiError('invalid_json', 'the body is not valid JSON')
    throw error
  }
}

/** An rrweb event: an object with an integer `type` of rrweb's, a finite `timestamp` ≥ 0 and `data` (any value). */
const isRrwebEvent = (type: number, timestamp: number, flags: number) =>
  flags === (IS_OBJECT | HAS_DATA) && Number.isInteger(type) && type >= 0 && type <= MAX_EVENT_TYPE && Number.isFinite(timestamp) && timestamp >= 0

/** What the chunk says about itself; the events are stored as they came, in the order they came. */
export interface ReplayChunk {
  /** Which items of the events are valid rrweb events, in order. */
  kept: Uint32Array
  dropped: number
  firstTimestamp: number
  lastTimestamp: number
  hasFullSnapshot: boolean
  /** `href` of the first meta event: the page the recording starts on. */
  entryUrl: string | null
  /** That meta event's time (NaN without one). */
  entryAt: number
}

/** Keeps the valid rrweb events of a chunk and reads what the session needs from them. */
export function readChunk(events: ScannedEvents): ReplayChunk {
  const kept = new Uint32Array(events.count)
  let n = 0
  let first = Infinity
  let last = -Infinity
  let hasFullSnapshot = false
  let entryUrl: string | null = null
  let entryAt = Infinity
  for (let k = 0; k < events.count; k++) {
    const type = events.type[k]
    const timestamp = events.timestamp[k]
    if (!isRrwebEvent(type, timestamp, events.flags[k])) continue
    kept[n++] = k
    if (timestamp < first) first = timestamp
    if (timestamp > last) last = timestamp
    if (type === FULL_SNAPSHOT) hasFullSnapshot = true
    if (type === META && timestamp < entryAt) {
      const href = (events.item(k) as { data: { href?: unknown } | null }).data?.href
      // An href the session would keep nothing of (NUL alone) is no entry: it must not hide a real page's meta event after it.
      if (typeof href === 'string' && sessionText(href) !== null) {
        entryUrl = href
        entryAt = timestamp
      }
    }
  }
  return { kept: kept.subarray(0, n), dropped: events.count - n, firstTimestamp: first, lastTimestamp: last, hasFullSnapshot, entryUrl, entryAt: entryUrl === null ? NaN : entryAt }
}

/**
 * The kept events as they are stored, between the brackets of their array: the bytes they came as
 * when none was dropped, else the kept ones joined by commas. What identifies a chunk (`eventsHash`).
 */
export function storedEvents(events: ScannedEvents, chunk: ReplayChunk): Uint8Array {
  const { kept } = chunk
  if (chunk.dropped === 0) return events.bytes.subarray(events.start[kept[0]], events.end[kept[kept.length - 1]])
  return Buffer.concat(joined(Array.from(kept, (k) => [events.bytes.subarray(events.start[k], events.end[k])])))
}

/**
 * The JSON a chunk is stored as: the body as it came when it can be (every event kept, no key in it),
 * else the same bytes with `storedEvents` for the events, without the key, and without an `events`
 * member that a later one replaced.
 */
export function storedJson(events: ScannedEvents, chunk: ReplayChunk, kept: Uint8Array): Uint8Array {
  const { bytes, members } = events
  if (chunk.dropped === 0 && !members.some((m) => m.key === 'apiKey')) return bytes
  const eventsMember = members.findLastIndex((m) => m.key === 'events')
  // Each member kept, as the pieces it is written in.
  const written = members.flatMap((m, i) => {
    if (i === eventsMember) return [[EVENTS_OPEN, kept, ARRAY_CLOSE]]
    return m.key === 'apiKey' || m.key === 'events' ? [] : [[bytes.subarray(m.start, m.end)]]
  })
  return Buffer.concat([OBJECT_OPEN, ...joined(written), OBJECT_CLOSE])
}

const [COMMA, EVENTS_OPEN, ARRAY_CLOSE, OBJECT_OPEN, OBJECT_CLOSE] = [',', '"events":[', ']', '{', '}'].map((text) => Buffer.from(text))
/** The pieces of each item, with a comma between items. */
const joined = (items: Uint8Array[][]) => items.flatMap((pieces, i) => (i === 0 ? pieces : [COMMA, ...pieces]))

/** The compressed chunk, as `encodeChunk` makes it. */
export interface EncodedChunk {
  contentHash: string
  rawBytes: number
  data: Uint8Array
}

/**
 * What the body reader made of `events` before the route runs: the chunk's facts and its stored
 * form, and nothing of the body's bytes.
 */
export class ReceivedChunk {
  constructor(
    /** Items in `events`. */
    readonly items: number,
    readonly accepted: number,
    readonly dropped: number,
    readonly firstTimestamp: number,
    readonly lastTimestamp: number,
    readonly hasFullSnapshot: boolean,
    readonly entryUrl: string | null,
    readonly entryAt: number,
    /** Null when no event was kept. */
    readonly encoded: EncodedChunk | null,
  ) {}

  static of(items: number, chunk: ReplayChunk | null, encoded: EncodedChunk | null): ReceivedChunk {
    if (!chunk) return new ReceivedChunk(items, 0, items, NaN, NaN, false, null, NaN, null)
    return new ReceivedChunk(items, chunk.kept.length, chunk.dropped, chunk.firstTimestamp, chunk.lastTimestamp, chunk.hasFullSnapshot, chunk.entryUrl, chunk.entryAt, encoded)
  }
}

/** The body's `events`, which must have been an array (see the model) of at most `MAX_EVENTS` items. */
export function receivedChunkOf(body: ReplayBody): ReceivedChunk {
  const chunk = body.events
  if (Array.isArray(chunk)) throw new Error('/events bodies are read by replayBodyReaders(), which the app gives to its body parser')
  if (!(chunk instanceof ReceivedChunk)) throw new ApiError('validation_failed', '/events: Expected array', { path: '/events' })
  if (chunk.items > MAX_EVENTS) throw new ApiError('validation_failed', `/events: Expected at most ${MAX_EVENTS} items`, { path: '/events' })
  return chunk
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

export interface ReplayRows extends SessionTouches {
  chunks: ReplayChunkRow[]
}

/**
 * The rows one `/events` request stores: the chunk (when it kept any event) and what it tells of the
 * session and end user. Client times more than a day ahead are clamped for the columns; the events
 * themselves are stored untouched, so that they replay as recorded. A chunk without a valid event
 * shows no activity (a tracker's outbox may resend it hours later): its receipt time is only what a
 * session or end user it creates starts at, never a time it moves. Without an end user named, the
 * session's is touched, made (newEndUserId) only when the session has none.
 */
export function replayRows(
  body: ReplayBody,
  chunk: ReceivedChunk,
  caller: Caller,
  client: ClientFacts,
  receivedAt: number,
  newEndUserId: () => string,
): ReplayRows {
  const endUserId = body.endUserId ?? newEndUserId()
  const windowId = body.windowId ?? ''
  const { encoded } = chunk
  const kept = encoded !== null
  const firstAt = kept ? clampTimestamp(chunk.firstTimestamp, receivedAt) : receivedAt
  const lastAt = kept ? clampTimestamp(chunk.lastTimestamp, receivedAt) : receivedAt
  const properties = body.automaticProperties ?? null
  const entryUrl = sessionText(chunk.entryUrl)
  const session: SessionTouch = {
    projectId: caller.projectId,
    sessionId: body.sessionId,
    environment: caller.environment,
    endUserId,
    firstAt: Math.min(firstAt, lastAt),
    lastAt: Math.max(firstAt, lastAt),
    ...(!kept && { noActivity: true }),
    entryUrl,
    entryAt: entryUrl ? clampTimestamp(chunk.entryAt, receivedAt) : null,
    referrer: sessionText(properties?.referrer),
    ...client.userAgent,
    automaticProperties: properties,
    // The chunk's own time: a chunk resent after newer ones must not set the session's values back.
    ...(kept && { propertiesAt: Math.max(firstAt, lastAt) }),
    windowIds: body.windowId ? [body.windowId] : [],
    geo: client.geo,
    sdkVersion: sessionText(body.sdkVersion),
  }
  const endUser: EndUserTouch = { projectId: caller.projectId, endUserId, firstAt: session.firstAt, at: session.lastAt, noActivity: session.noActivity, geo: session.geo }
  return {
    chunks:
      encoded
        ? [
            {
              projectId: caller.projectId,
              sessionId: body.sessionId,
              windowId,
              contentHash: encoded.contentHash,
              seq: body.seq ?? null,
              firstTimestamp: session.firstAt,
              lastTimestamp: session.lastAt,
              eventCount: chunk.accepted,
              hasFullSnapshot: chunk.hasFullSnapshot,
              rawBytes: encoded.rawBytes,
              data: encoded.data,
            },
          ]
        : [],
    sessions: [session],
    ...endUserTouches(body.sessionId, !!body.endUserId, endUser),
  }
}
