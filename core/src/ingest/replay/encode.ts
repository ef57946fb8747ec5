import type { ScannedEvents } from './scan'
import { storedEvents, storedJson, type EncodedChunk, type ReplayChunk } from './service'

/**
 * On recordings of a real page by the tracker (the replay bench's fixture), level 2 stores 1/18 of
 * the JSON at about 1 ms of CPU per MB; level 3 takes 40% longer for a slightly worse ratio, and
 * levels from 5 up gain a few percent for four to five times the CPU.
 */
const ZSTD_LEVEL = 2

/**
 * The stored form of a chunk: the JSON object the tracker sent (its kept events, with the session
 * fields sent beside them), zstd-compressed on Bun's worker threads so that the event loop goes on
 * reading other requests meanwhile, and what identifies it.
 */
export async function encodeChunk(events: ScannedEvents, chunk: ReplayChunk): Promise<EncodedChunk> {
  const kept = storedEvents(events, chunk)
  const json = storedJson(events, chunk, kept)
  return { contentHash: eventsHash(kept), rawBytes: json.byteLength, data: await Bun.zstdCompress(json, { level: ZSTD_LEVEL }) }
}

/**
 * What makes a resent chunk the same chunk: its events, byte for byte as they are stored (see
 * `storedEvents`), hashed to 128 bits. Not the whole body: the tracker may resend a chunk another
 * way (a beacon with the key in the body after a fetch whose answer was lost, gzip or not), and the
 * retry must still be a no-op; the events it carries are the same bytes whichever way it travels.
 * Nothing less than the events either: two chunks of one window whose events have the same types
 * and times but not the same data (two large events of one millisecond, each alone in its chunk
 * once a payload is split) are two chunks. The hash only tells chunks of one session and window
 * apart (it is part of that key) and needs no resistance to an adversary, who could only collide
 * their own chunks.
 */
export function eventsHash(events: Uint8Array): string {
  return Bun.hash.xxHash3(events, 0n).toString(16).padStart(16, '0') + Bun.hash.xxHash3(events, 0x9e3779b97f4a7c15n).toString(16).padStart(16, '0')
}

/** The events of a stored chunk. */
export const decodeChunk = (data: Uint8Array): unknown[] => JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(data))).events
