/** Usage is counted per calendar month in UTC; `month` is its first day, as stored. */
export function monthOf(nowMs: number): string {
  const date = new Date(nowMs)
  return `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}-01`
}

/**
 * Which requests of one project fit, in arrival order: a request is admitted while the usage before it
 * is under the limit, so the limit is checked per request and a project stops once it is reached.
 */
export function admitInOrder(usage: number, limit: number | null, items: readonly number[]): boolean[] {
  let running = usage
  return items.map((n) => {
    if (limit !== null && running >= limit) return false
    running += n
    return true
  })
}

export const isOverLimit = (usage: number | undefined, limit: number | null): boolean =>
  limit !== null && usage !== undefined && usage >= limit
