import { t } from 'elysia'
import { Id, Integer, OptionalEndUserId, Properties } from '../shared/model'

/**
 * POST /events (fielded). `events` is not parsed: the body reader (intake.ts) scans it, keeps its
 * valid items as they came and counts the others (a bad item is dropped, never fatal), and hands the
 * route a `ReceivedChunk` in its place, which the route checks (`receivedChunkOf`). Declared as an
 * array here, the validator would walk every one of a 1 MB chunk's thousands of items to learn nothing.
 */
export const ReplayBody = t.Object({
  sessionId: Id,
  endUserId: OptionalEndUserId,
  windowId: t.Optional(t.Union([Id, t.Null()])),
  events: t.Any({ description: 'RrwebEvent[]' }),
  automaticProperties: Properties,
  /** Any length: the session keeps its first 2,048 characters (sessionText); a chunk is never refused for it. */
  sdkVersion: t.Optional(t.Union([t.String(), t.Null()])),
  /** Read only to keep a key sent in the body out of what is stored. */
  apiKey: t.Optional(t.Unknown()),
  /** Per-window chunk sequence number, when the tracker sends one. */
  seq: t.Optional(t.Union([Integer({ minimum: 0, maximum: 2_147_483_647 }), t.Null()])),
})

export type ReplayBody = typeof ReplayBody.static
