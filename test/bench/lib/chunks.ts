/**
 * Splits items, in order, into runs whose summed sizes stay within `max` (an item larger goes alone):
 * the batches the tracker's replay batcher makes of them when they all arrive at once (a test in
 * test/tracker/queue.test.ts holds the two to the same runs).
 */
export function chunkBySize<T>(items: T[], sizeOf: (item: T) => number, max: number): T[][] {
  const chunks: T[][] = []
  let current: T[] = []
  let size = 0
  for (const item of items) {
    const itemSize = sizeOf(item)
    if (current.length && size + itemSize > max) {
      chunks.push(current)
      current = []
      size = 0
    }
    current.push(item)
    size += itemSize
  }
  if (current.length) chunks.push(current)
  return chunks
}
