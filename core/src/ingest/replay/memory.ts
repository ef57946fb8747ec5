/**
 * Replay chunks make garbage fast: a 1 MB body becomes its text, the parsed events, their JSON again
 * and the compressed bytes, several megabytes a chunk, much of it outside the JavaScript heap where
 * the collector does not see it growing. Left alone, a process taking chunks at full speed grows to
 * a gigabyte before collecting. Past a resident size this asks for a full collection, at most every
 * `minIntervalMs`, which keeps memory bounded for a few percent of one core.
 */
export function memoryGuard({ maxRssBytes, minIntervalMs }: { maxRssBytes: number; minIntervalMs: number }) {
  let last = 0
  return () => {
    const now = performance.now()
    if (now - last < minIntervalMs) return
    last = now
    if (process.memoryUsage.rss() > maxRssBytes) Bun.gc(true)
  }
}
