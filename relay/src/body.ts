import { UpstreamError } from './errors'

/**
 * Body helpers on Web streams. A body of undeclared size (chunked) is counted as it passes; past the
 * limit the stream errors, which aborts the upstream request, and the relay answers 413.
 */

const tooLarge = (limit: number) => new UpstreamError('too_large', `the body is over the limit of ${limit} bytes`)

/**
 * The same bytes, pulled one chunk at a time as the consumer asks (high-water mark 0), so a slow
 * upstream slows the client down instead of the relay buffering the difference.
 */
export function cappedStream(body: ReadableStream<Uint8Array>, limit: number, onOverLimit: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  let seen = 0
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) return controller.close()
        seen += value.byteLength
        if (seen > limit) {
          const error = tooLarge(limit)
          onOverLimit()
          controller.error(error)
          await reader.cancel(error).catch(() => {})
          return
        }
        controller.enqueue(value)
      },
      cancel(reason) {
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}

/** The whole body, refusing it past `limit` bytes (for bodies the relay must read to rewrite). */
export async function readCapped(request: Request, declaredLength: number | null, limit: number): Promise<Uint8Array> {
  // A declared length was already checked against the limit, and the server holds the client to it.
  if (declaredLength !== null) return new Uint8Array(await request.arrayBuffer())
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    chunks.push(chunk)
  }
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}
