import { createHash } from 'node:crypto'

/** A hash of what identifies an item, for items without an id of their own: a resend is stored once. */
export const contentHash = (parts: readonly unknown[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('base64url')

/**
 * `contentHash` for each item of one request, in order. Equal items of one request are not resends
 * of each other (a page may log the same line twice in one millisecond, and both were sent), nor of
 * the equal items of another request: a loop that warns 60 times in a millisecond is sent as a batch
 * of 50 and one of 10 (the tracker's batch size), and those 10 are new lines. So an item that has
 * equals in its request hashes with its rank among them and with the request's whole content: each
 * is stored once, and a resend of the request (the same parcel) hashes the same again. An item
 * without equals hashes by its content alone, as a resend of it in any batch does.
 */
export function requestContentHashes(items: readonly (readonly unknown[])[]): string[] {
  const hashes = items.map(contentHash)
  const equals = new Map<string, number>()
  for (const hash of hashes) equals.set(hash, (equals.get(hash) ?? 0) + 1)
  if (equals.size === hashes.length) return hashes
  const request = contentHash(hashes)
  const seen = new Map<string, number>()
  return hashes.map((hash) => {
    if (equals.get(hash) === 1) return hash
    const rank = seen.get(hash) ?? 0
    seen.set(hash, rank + 1)
    return contentHash([hash, rank, request])
  })
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
