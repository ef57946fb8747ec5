/**
 * Replay chunks make garbage fast: a 1 MB body becomes its text, the parsed events, their JSON again
 * and the compressed bytes, several megabytes a chunk, much of it outside the JavaScript heap where
 * the collector does not see it growing. Left alone, a process taking chunks at full speed grows to
 * a gigabyte before collecting. This asks for a full collection once the resident size has grown
 * `headroomBytes` past what the last one left (and is past `floorBytes`), at most every
 * `minIntervalMs`: memory stays bounded, and a process that holds steady is left alone.
 */
export function memoryGuard({ floorBytes, headroomBytes, minIntervalMs }: { floorBytes: number; headroomBytes: number; minIntervalMs: number }) {
  let last = 0
  let baseline = 0
  return () => {
    const now = performance.now()
    if (now - last < minIntervalMs) return
    const rss = process.memoryUsage.rss()
    if (rss < floorBytes || rss < baseline + headroomBytes) return
    last = now
    Bun.gc(true)
    baseline = process.memoryUsage.rss()
  }
}
