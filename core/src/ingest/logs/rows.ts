import { createHash } from 'node:crypto'
import { ApiError } from '../../errors'
import type { Caller } from '../../http/auth'
import type { Logger } from '../../log'
import type { SinkRows, Writer } from '../../writer'
import { requestBytes } from '../shared/values'

/**
 * Helpers the observability routes (logs, network, spans, errors, presence, findings) share for
 * turning requests into rows.
 */

/** A hash of what identifies an item, for items without an id of their own: a resend is stored once. */
export const contentHash = (parts: readonly unknown[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('base64url')

/**
 * Rows sorted by key, so that concurrent commits (other processes) lock rows in one order; with
 * `lastWins`, one row per key, the last one, since `on conflict do update` refuses to meet the same
 * row twice in a statement.
 */
export function sortedBy<T>(rows: readonly T[], key: (row: T) => string, { lastWins = false } = {}): T[] {
  const list = lastWins ? [...new Map(rows.map((row) => [key(row), row] as const)).values()] : [...rows]
  return list.sort((a, b) => {
    const ka = key(a)
    const kb = key(b)
    return ka < kb ? -1 : ka > kb ? 1 : 0
  })
}

/** Hands one request's rows to the writer; resolves once they are committed. */
export const commit = (writer: Writer, caller: Caller, request: Request, items: number, writes: SinkRows[]): Promise<void> =>
  writer.write({ projectId: caller.projectId, monthlyLimit: caller.monthlyLimit, items, bytes: requestBytes(request), writes })

/** A read a route needs before answering: if the database fails it, the answer is 503 like a failed write. */
export async function readOrUnavailable<T>(read: Promise<T>, log: Logger): Promise<T> {
  try {
    return await read
  } catch (error) {
    if (error instanceof ApiError) throw error
    log.error('read failed', { error: String((error as Error)?.message ?? error).slice(0, 300) })
    throw new ApiError('storage_unavailable', 'storage is unavailable; retry later', { retryAfterSeconds: 2 })
  }
}
