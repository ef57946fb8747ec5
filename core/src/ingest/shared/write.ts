import { answerWithin, errorText, READ_TIMEOUT_MS } from '../../db'
import { ApiError } from '../../errors'
import type { Caller } from '../../http/auth'
import { readBodyBytes } from '../../http/body'
import type { Logger } from '../../log'
import type { SinkRows } from '../../sink'
import type { Writer } from '../../writer'

/** Hands one request's rows to the writer; resolves once they are committed (a 200 means stored). */
export const commit = (writer: Writer, caller: Caller, request: Request, items: number, writes: SinkRows[]): Promise<void> =>
  writer.write({ projectId: caller.projectId, monthlyLimit: caller.monthlyLimit, items, bytes: requestBytes(request), writes })

/**
 * A read a route needs before answering: if the database fails it, or has not answered it within
 * READ_TIMEOUT_MS, the answer is 503 like a failed write.
 */
export async function readOrUnavailable<T>(read: Promise<T>, log: Logger): Promise<T> {
  try {
    return await answerWithin(read, READ_TIMEOUT_MS, `no answer within ${READ_TIMEOUT_MS} ms`)
  } catch (error) {
    if (error instanceof ApiError) throw error
    log.error('read failed', { error: errorText(error) })
    throw new ApiError('storage_unavailable', 'storage is unavailable; retry later', { retryAfterSeconds: 2 })
  }
}

/**
 * Byte estimate of a request for the writer's bounds: the body as read when it was compressed or sent
 * without a length, else its Content-Length.
 */
export function requestBytes(request: Request, fallback = 1024): number {
  const read = readBodyBytes(request)
  if (read !== undefined) return read
  const declared = Number(request.headers.get('content-length'))
  return declared > 0 ? declared : fallback
}
