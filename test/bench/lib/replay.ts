import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CHUNK_MAX_BYTES } from '../../../tracker/src/queue'
import { chunkBySize } from './chunks'
import type { ReplayBody } from './shop/server'

/**
 * Real rrweb recordings for the replay benchmark: what the project's own tracker sent while a
 * scripted shopper used the bench shop in headless Chromium (`npm run bench -- replay-recording`
 * makes them; see that file). Stored as the `/events` bodies the tracker sent, decoded, in one
 * zstd-compressed JSON file beside the suites.
 */
export const RECORDING_FILE = join(import.meta.dir, '..', 'fixtures', 'shop-replay.json.zst')

export interface ReplayRecording {
  /** How the recording was made: tracker version, redaction, browser, date, sessions. */
  made: Record<string, string | number>
  /** Every `/events` body the tracker sent, in the order they arrived. */
  bodies: ReplayBody[]
}

export function readRecording(file = RECORDING_FILE): ReplayRecording {
  if (!existsSync(file)) throw new Error(`${file} is missing; make it with \`npm run bench -- replay-recording\``)
  return JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(readFileSync(file))))
}

export function writeRecording(recording: ReplayRecording, file = RECORDING_FILE): number {
  const packed = Bun.zstdCompressSync(Buffer.from(JSON.stringify(recording)), { level: 19 })
  writeFileSync(file, packed)
  return packed.byteLength
}

type RrwebEvent = ReplayBody['events'][number]

export interface ReplayStream {
  sessionId: string
  windowId: string | undefined
  automaticProperties: unknown
  sdkVersion: unknown
  events: RrwebEvent[]
}

/** Each window's events in the order they were recorded, from the bodies that carried them. */
export function streamsOf(recording: ReplayRecording): ReplayStream[] {
  const streams = new Map<string, ReplayStream>()
  for (const body of recording.bodies) {
    const key = `${body.sessionId}\n${body.windowId ?? ''}`
    const stream = streams.get(key) ?? { sessionId: body.sessionId, windowId: body.windowId, automaticProperties: body.automaticProperties, sdkVersion: body.sdkVersion, events: [] }
    stream.events.push(...body.events)
    streams.set(key, stream)
  }
  for (const stream of streams.values()) stream.events.sort((a, b) => a.timestamp - b.timestamp)
  return [...streams.values()]
}

const utf8 = new TextEncoder()

/**
 * The recording as chunks of about `maxBytes` of JSON (UTF-8, as the tracker counts), split where the
 * tracker splits a payload (see `chunkBySize`): what a tracker sends when that much is waiting (a long flush interval,
 * an outbox drained after being offline, a page whose snapshot alone is that large). Each body is
 * a fielded `/events` body; its `sessionId` holds `token`, for the load generator to make unique.
 * Times are moved so that the recording ends at `endingAt`.
 */
export function replayChunkBodies(recording: ReplayRecording, token: string, endingAt = Date.now(), maxBytes = CHUNK_MAX_BYTES): string[] {
  const streams = streamsOf(recording)
  const shift = endingAt - Math.max(...streams.map((s) => s.events.at(-1)?.timestamp ?? 0))
  const bodies: string[] = []
  for (const [n, stream] of streams.entries()) {
    const sized = stream.events.map((event) => [{ ...event, timestamp: event.timestamp + shift }, utf8.encode(JSON.stringify(event)).length] as const)
    for (const [seq, chunk] of chunkBySize(sized, ([, size]) => size, maxBytes).entries()) {
      bodies.push(
        JSON.stringify({
          sessionId: `replay-${n}-${token}`,
          windowId: stream.windowId,
          seq,
          events: chunk.map(([event]) => event),
          automaticProperties: stream.automaticProperties,
          sdkVersion: stream.sdkVersion,
        }),
      )
    }
  }
  return bodies
}
