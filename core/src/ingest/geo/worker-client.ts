import { ConfigError } from '../../config'
import { isPublicAddress, normalizeAddress } from '../../http/client-ip'
import type { LogFields, Logger } from '../../log'
import type { GeoLookup } from './locator'
import type { Geo } from './service'

/**
 * GeoIP lookups on a worker thread of their own (worker.ts), the database mapped there.
 *
 * JavaScriptCore counts a mapped file as heap (an ArrayBuffer's whole length), and it lets garbage
 * grow in proportion to what it takes to be live before it collects. On core's main thread the 130
 * MB city database therefore let core reach 369 MB under single custom events (wrk, 32 connections,
 * 30 s) with no collection asked for; with the memory guard (memory.ts) holding it under 200 MB, the
 * guard collected every few seconds, and its pauses (up to 70 ms) were the slowest requests. Without
 * the mapping core held at 109 to 124 MB by JavaScriptCore's own collections. A worker has a heap of
 * its own (about 8 MB with its runtime, `smol`). And a lookup that touches a page of the file not
 * read yet waits for the disk there, not with every request under way.
 *
 * Only public addresses cross, each answer is kept (up to CACHE_SIZE addresses, then all forgotten at
 * once: a few lines, not an LRU, for a cache that only saves a message), and a lookup is
 * never what fails or stalls a request: past MAX_WAITING lookups waiting, after LOOKUP_TIMEOUT_MS, or
 * while the worker is gone, the answer is null (not located), as for an address the database does
 * not know. A worker that ended (it should not) is started again by the next lookup, at most once
 * every RESTART_MS (doubling, up to MAX_RESTART_MS, while it cannot be).
 */

export type ToGeoWorker = { open: readonly string[] } | [id: number, address: string]
export type FromGeoWorker =
  | { opened: true }
  | { failed: string; setting: boolean }
  | { log: 'warn' | 'error'; message: string; fields?: LogFields }
  | [id: number, geo: Geo | null]

export interface GeoWorkerOptions {
  /** The worker's script: worker.ts, unless a test runs one that fails on purpose. */
  url?: string
  lookupTimeoutMs?: number
  restartMs?: number
}

const CACHE_SIZE = 10_000
const MAX_WAITING = 1_000
const LOOKUP_TIMEOUT_MS = 2_000
const RESTART_MS = 1_000
const MAX_RESTART_MS = 60_000
const WORKER_URL = new URL('./worker.ts', import.meta.url).href

const NOT_LOCATED: Promise<Geo | null> = Promise.resolve(null)

interface Waiting {
  address: string
  since: number
  resolve(geo: Geo | null): void
}

/** Starts the worker and opens `paths` there; fails as opening them on this thread would (ConfigError). */
export async function openGeoWorker(paths: readonly string[], log: Logger, options: GeoWorkerOptions = {}): Promise<GeoLookup & { close(): void }> {
  const { url = WORKER_URL, lookupTimeoutMs = LOOKUP_TIMEOUT_MS, restartMs = RESTART_MS } = options
  const waiting = new Map<number, Waiting>()
  const known = new Map<string, Geo | null>()
  let nextId = 0
  let closed = false
  let startedAt = performance.now()
  let worker: Worker | undefined

  const answer = (id: number, geo: Geo | null) => {
    const lookup = waiting.get(id)
    if (!lookup) return // timed out meanwhile
    waiting.delete(id)
    if (known.size >= CACHE_SIZE) known.clear()
    known.set(lookup.address, geo)
    lookup.resolve(geo)
  }
  const notLocated = (ids: Iterable<number>) => {
    for (const id of ids) {
      waiting.get(id)?.resolve(null)
      waiting.delete(id)
    }
  }
  const gone = (instance: Worker, failure?: string) => {
    if (worker !== instance) return
    worker = undefined
    notLocated([...waiting.keys()])
    if (!closed) log.error('the GeoIP worker ended; addresses are not located until it is started again', { error: failure })
  }

  worker = await startWorker(url, paths, log, answer, gone)

  // One timer for every lookup waiting, running only while one is.
  let sweeping: ReturnType<typeof setInterval> | undefined
  const sweep = () => {
    const now = performance.now()
    const late: number[] = []
    for (const [id, lookup] of waiting) if (now - lookup.since >= lookupTimeoutMs) late.push(id)
    notLocated(late)
    if (waiting.size === 0) {
      clearInterval(sweeping)
      sweeping = undefined
    }
  }

  // A worker that cannot be started again (its file gone meanwhile) is tried again less and less often.
  let restartAfterMs = restartMs
  let restarting = false
  const restart = () => {
    restarting = true
    startedAt = performance.now()
    startWorker(url, paths, log, answer, gone).then(
      (started) => {
        restarting = false
        restartAfterMs = restartMs
        if (closed) started.terminate()
        else worker = started
      },
      (error: Error) => {
        restarting = false
        restartAfterMs = Math.min(restartAfterMs * 2, MAX_RESTART_MS)
        log.error('the GeoIP worker could not be started again', { error: error.message, retryInMs: restartAfterMs })
      },
    )
  }

  return {
    lookup(raw) {
      const address = normalizeAddress(raw)
      if (!address || !isPublicAddress(address)) return NOT_LOCATED
      const kept = known.get(address)
      if (kept !== undefined) return Promise.resolve(kept)
      if (!worker) {
        if (!closed && !restarting && performance.now() - startedAt >= restartAfterMs) restart()
        return NOT_LOCATED
      }
      if (waiting.size >= MAX_WAITING) return NOT_LOCATED
      const id = nextId++
      const located = new Promise<Geo | null>((resolve) => waiting.set(id, { address, since: performance.now(), resolve }))
      worker.postMessage([id, address] satisfies ToGeoWorker)
      if (!sweeping) {
        sweeping = setInterval(sweep, Math.max(10, lookupTimeoutMs / 4))
        sweeping.unref()
      }
      return located
    },
    close() {
      closed = true
      worker?.terminate()
      worker = undefined
      notLocated([...waiting.keys()])
    },
  }
}

function startWorker(
  url: string,
  paths: readonly string[],
  log: Logger,
  answer: (id: number, geo: Geo | null) => void,
  gone: (worker: Worker, failure?: string) => void,
): Promise<Worker> {
  return new Promise((resolve, reject) => {
    // `smol`: a smaller heap for a thread that only reads the database.
    const worker = new Worker(url, { smol: true } as WorkerOptions)
    let opened = false
    worker.onmessage = ({ data }: MessageEvent<FromGeoWorker>) => {
      if (Array.isArray(data)) return answer(data[0], data[1])
      if ('log' in data) return log[data.log](data.message, data.fields)
      if ('opened' in data) {
        opened = true
        // It must not keep core running once everything else has stopped.
        ;(worker as Worker & { unref(): void }).unref()
        return resolve(worker)
      }
      worker.terminate()
      reject(data.setting ? new ConfigError(data.failed) : new Error(data.failed))
    }
    // An exception nothing caught in the worker, which then ends.
    let failure: string | undefined
    worker.addEventListener('error', (event) => (failure = errorLine(event as ErrorEvent)))
    worker.addEventListener('close', () => (opened ? gone(worker, failure) : reject(new Error(`the GeoIP worker ended before it opened the database${failure ? `: ${failure}` : ''}`))))
    worker.postMessage({ open: paths } satisfies ToGeoWorker)
  })
}

/**
 * What an uncaught exception in the worker said. Bun puts the source lines around the throw in the
 * event's message, and the error itself does not cross threads: the line starting `error: ` is its
 * message.
 */
function errorLine(event: ErrorEvent): string {
  const message = String(event.error?.message ?? event.message)
  return /^error: (.*)$/m.exec(message)?.[1] ?? message.split('\n')[0]
}
