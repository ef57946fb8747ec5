import type { EncodedChunk } from './service'

/** Fast and still a good ratio on rrweb JSON; higher levels cost several times the CPU for a few percent. */
const ZSTD_LEVEL = 3

/**
 * The stored form of a chunk: the JSON object the tracker sent (its events, with the session fields
 * sent beside them), zstd-compressed on Bun's worker threads so that the event loop goes on parsing
 * other requests meanwhile.
 */
export async function encodeChunk(json: Uint8Array, contentHash: string): Promise<EncodedChunk> {
  const data = await Bun.zstdCompress(json, { level: ZSTD_LEVEL })
  return { contentHash, rawBytes: json.byteLength, data }
}

/**
 * What makes a resent chunk the same chunk: its events' timeline, the type and time of every event in
 * order, hashed to 128 bits. Not the bytes of the body: the tracker may resend a chunk another way
 * (a beacon with the key in the body after a fetch whose answer was lost, gzip or not), and the
 * retry must still be a no-op. Chunks of one window are consecutive in time, so two different ones
 * never share a timeline. The hash only tells chunks of one session and window apart (it is part of
 * that key) and needs no resistance to an adversary, who could only collide their own chunks.
 */
export function timelineHash(timeline: Float64Array): string {
  const bytes = new Uint8Array(timeline.buffer, timeline.byteOffset, timeline.byteLength)
  return Bun.hash.xxHash3(bytes, 0n).toString(16).padStart(16, '0') + Bun.hash.xxHash3(bytes, 0x9e3779b97f4a7c15n).toString(16).padStart(16, '0')
}

/** The events of a stored chunk. */
export const decodeChunk = (data: Uint8Array): unknown[] => JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(data))).events
