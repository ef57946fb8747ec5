import type { EncodedChunk } from './service'

/**
 * On recordings of a real page by the tracker (the replay bench's fixture), level 2 stores 1/18 of
 * the JSON at about 1 ms of CPU per MB; level 3 takes 40% longer for a slightly worse ratio, and
 * levels from 5 up gain a few percent for four to five times the CPU.
 */
const ZSTD_LEVEL = 2

/**
 * The stored form of a chunk: the JSON object the tracker sent (its events, with the session fields
 * sent beside them), zstd-compressed on Bun's worker threads so that the event loop goes on reading
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
