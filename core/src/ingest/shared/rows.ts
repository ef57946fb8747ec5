import { createHash } from 'node:crypto'

/** A hash of what identifies an item, for items without an id of their own: a resend is stored once. */
export const contentHash = (parts: readonly unknown[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('base64url')

/**
 * `contentHash` for the items of one request, in order. Equal items of one request are not resends
 * of each other (a page may log the same line twice in one millisecond, and both were sent): the
 * second and later of them hash with their rank among their equals, so each is stored once, and a
 * resend of the request hashes the same again.
 */
export function requestContentHasher(): (parts: readonly unknown[]) => string {
  const seen = new Map<string, number>()
  return (parts) => {
    const hash = contentHash(parts)
    const rank = seen.get(hash) ?? 0
    seen.set(hash, rank + 1)
    return rank === 0 ? hash : contentHash([...parts, rank])
  }
}

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
