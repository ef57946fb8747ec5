import type { BodyReader } from '../../http/body'
import { encodeChunk } from './encode'
import type { Gate } from './gate'
import { MAX_EVENTS, readChunk, ReceivedChunk, scanBody } from './service'

/**
 * Reads an `/events` body into what the route needs, in the gate's turn: inflated, scanned (not
 * parsed, see scan.ts), its valid events counted and its stored form compressed. The body's bytes
 * are let go of here, before the route waits for the commit: a request holds only the compressed
 * chunk from then on, and the megabyte it came as is garbage while it is still young.
 *
 * `events` becomes a `ReceivedChunk` for the route (`receivedChunkOf`); the other fields are parsed
 * as usual and validated by the route's model.
 */
export function replayBodyReader(gate: Gate, checkCaller: (request: Request) => Promise<void>): BodyReader {
  return async (body, request) => {
    // A caller to be refused (a key in the header that is unknown, or over its limit) is refused
    // here, before its body is read or takes a turn that callers to be served wait for.
    await checkCaller(request)
    const sent = await body.read()
    return gate.run(sent.byteLength, async () => {
      const { fields, events } = scanBody(body.decode(sent))
      if (!events) return fields
      let received: ReceivedChunk
      if (events.count > MAX_EVENTS) received = ReceivedChunk.of(events.count, null, null)
      else {
        const chunk = readChunk(events)
        received = ReceivedChunk.of(events.count, chunk, chunk.kept.length > 0 ? await encodeChunk(events, chunk) : null)
      }
      ;(fields as Record<string, unknown>).events = received
      return fields
    })
  }
}
