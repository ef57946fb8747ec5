import { fullGC } from 'bun:jsc'

/**
 * Keeps core's resident size near what it needs. JavaScriptCore collects when the heap has grown by
 * a factor of what it found live last time, and it counts as live what it cannot see into: on the
 * embedded database PGlite's memory, and large request bodies while they are held (a 1 MB replay
 * chunk leaves its body behind). So it lets garbage pile up before it collects: about 215 MB under
 * 1 MB replay chunks on the core bench. (The GeoIP database, a 130 MB mapped file that it counts as
 * live heap too, is read on a worker thread for that reason: see geo/worker-client.ts.)
 *
 * This asks for a full collection once the resident size is past `floorBytes` and has grown
 * `headroomBytes` past what the last collection left, looking every `intervalMs`. Under
 * `ceilingBytes` the collection leaves the pages it frees with the allocator, which reuses them.
 * Handed back to the system, they are faulted in again by the next requests: under single events
 * the process grew back by the headroom within a second or two, was collected again, and answered
 * slowly for a while after each collection (docs/performance.md, Memory). From the ceiling up, and
 * as soon as pages kept reach it, the allocator's clean-up hands them back. A process that holds
 * steady, or stays under the floor, is never paused.
 */
export interface MemoryGuardOptions {
  floorBytes: number
  headroomBytes: number
  ceilingBytes: number
  intervalMs: number
}

/** What the guard reads and asks of the runtime. */
export interface MemoryRuntime {
  residentBytes(): number
  /** A full collection; what it frees stays with the allocator (8 to 12 ms under load). */
  collectKeepingPages(): void
  /** A full collection and the allocator's clean-up, which hands freed pages back (20 to 60 ms). */
  collectHandingPagesBack(): void
}

const MB = 1024 * 1024

export const DEFAULT_MEMORY_GUARD: MemoryGuardOptions = { floorBytes: 128 * MB, headroomBytes: 32 * MB, ceilingBytes: 176 * MB, intervalMs: 25 }

const bunRuntime: MemoryRuntime = {
  residentBytes: () => process.memoryUsage.rss(),
  collectKeepingPages: () => fullGC(),
  collectHandingPagesBack: () => Bun.gc(true),
}

/** Starts looking; the returned function stops. The timer does not keep the process alive. */
export function startMemoryGuard(options: MemoryGuardOptions = DEFAULT_MEMORY_GUARD, runtime: MemoryRuntime = bunRuntime): () => void {
  const { floorBytes, headroomBytes, ceilingBytes, intervalMs } = options
  let baseline = 0
  let pagesKept = false
  const timer = setInterval(() => {
    const resident = runtime.residentBytes()
    const grown = resident >= floorBytes && resident >= baseline + headroomBytes
    if (!grown && !(pagesKept && resident >= ceilingBytes)) return
    pagesKept = resident < ceilingBytes
    if (pagesKept) runtime.collectKeepingPages()
    else runtime.collectHandingPagesBack()
    baseline = runtime.residentBytes()
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
