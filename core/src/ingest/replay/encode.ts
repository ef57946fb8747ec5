import type { EncodedChunk, RrwebEvent } from './service'

/** Fast and still a good ratio on rrweb JSON; higher levels cost several times the CPU for a few percent. */
const ZSTD_LEVEL = 3

/**
 * The stored form of a chunk: its events as JSON, zstd-compressed (on Bun's worker threads, so that
 * the event loop goes on parsing other requests meanwhile), and a content hash.
 *
 * The hash only has to tell a retry of this chunk from another chunk of the same session and window
 * (it is part of that key), not resist an adversary: a client can only collide its own chunks. 128 bits
 * of xxHash3 cost a hundredth of SHA-256 on a 1 MB chunk, which matters on the hottest path.
 */
export async function encodeChunk(events: readonly RrwebEvent[]): Promise<EncodedChunk> {
  const json = Buffer.from(JSON.stringify(events))
  const data = await Bun.zstdCompress(json, { level: ZSTD_LEVEL })
  return { contentHash: contentHash(json), rawBytes: json.byteLength, data }
}

export const contentHash = (bytes: Uint8Array): string =>
  Bun.hash.xxHash3(bytes, 0n).toString(16).padStart(16, '0') + Bun.hash.xxHash3(bytes, 0x9e3779b97f4a7c15n).toString(16).padStart(16, '0')

export const decodeChunk = (data: Uint8Array): unknown[] => JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(data)))
