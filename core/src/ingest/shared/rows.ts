import { createHash } from 'node:crypto'

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
