/**
 * Replay chunks make garbage fast: each one leaves its body (and its inflated body), a megabyte or
 * more, for the collector. JavaScriptCore collects when the heap has grown by a factor of what it
 * found live the last time, and it counts as live the memory-mapped GeoIP database (about 130 MB)
 * and, on the embedded database, PGlite's memory; so it lets that garbage pile up to several hundred
 * megabytes (about 540 MB at full speed on the replay bench) before it collects. This asks for a
 * full collection once the resident size has grown `headroomBytes` past what the last one left (and
 * is past `floorBytes`), at most every `minIntervalMs`: at full speed, a pause of about 16 ms every
 * 64 MB of bodies, and the process stays near 200 MB; a process that holds steady is left alone.
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
