import { UpstreamError } from './errors.ts'

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

/**
 * Reads a body of undeclared size up to `limit` bytes. Resolves with the bytes when it ended
 * within them, else with a stream that replays what was read and continues with the rest.
 */
export async function readUpTo(body: ReadableStream<Uint8Array>, limit: number): Promise<{ bytes: Uint8Array; rest?: never } | { rest: ReadableStream<Uint8Array>; bytes?: never }> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return { bytes: concat(chunks, size) }
    chunks.push(value)
    size += value.byteLength
    if (size > limit) break
  }
  return {
    rest: new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          if (chunks.length > 0) return controller.enqueue(chunks.shift()!)
          const { done, value } = await reader.read()
          if (done) controller.close()
          else controller.enqueue(value)
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    ),
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}
