/**
 * Keeps core's resident size near what it needs. JavaScriptCore collects when the heap has grown by
 * a factor of what it found live last time, and it counts as live the memory-mapped GeoIP database
 * (about 130 MB, of which only the pages lookups touch are resident) and, on the embedded database,
 * PGlite's memory. So it lets garbage pile up to twice that and more before it collects: measured on
 * the core bench, 240 to 350 MB under single events at 256 connections, about 540 MB under 1 MB
 * replay chunks (each leaves its body behind), against 135 and 215 MB with the mapping left out.
 *
 * This asks for a full collection once the resident size is past `floorBytes` and has grown
 * `headroomBytes` past what the last collection left, looking every `intervalMs`. Each costs a pause
 * of 15 to 60 ms; a process that holds steady, or stays under the floor, is never paused. Cheaper
 * collections leave the memory behind (README, Memory): `edenGC` what dies old, JavaScriptCore's
 * `fullGC` the pages `Bun.gc(true)` hands back to the system with the allocator's clean-up.
 */
export interface MemoryGuardOptions {
  floorBytes: number
  headroomBytes: number
  intervalMs: number
}

export const DEFAULT_MEMORY_GUARD: MemoryGuardOptions = { floorBytes: 128 * 1024 * 1024, headroomBytes: 32 * 1024 * 1024, intervalMs: 50 }

/** Starts looking; the returned function stops. The timer does not keep the process alive. */
export function startMemoryGuard({ floorBytes, headroomBytes, intervalMs }: MemoryGuardOptions = DEFAULT_MEMORY_GUARD): () => void {
  let baseline = 0
  const timer = setInterval(() => {
    const rss = process.memoryUsage.rss()
    if (rss < floorBytes || rss < baseline + headroomBytes) return
    Bun.gc(true)
    baseline = process.memoryUsage.rss()
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
