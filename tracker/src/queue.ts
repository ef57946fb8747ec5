import type { Clock } from './types'

/** Custom events go out 100 ms after the first one is queued, or at once when 50 are waiting. */
export const EVENT_FLUSH_MS = 100
export const EVENT_BATCH_MAX = 50
/** Logs, network errors, spans and error reports: a second, or 50 items. */
export const TELEMETRY_FLUSH_MS = 1000
export const TELEMETRY_BATCH_MAX = 50
/** Replay goes out about every 3 s, every 150 ms while someone watches live. */
export const REPLAY_FLUSH_MS = 3000
export const LIVE_REPLAY_FLUSH_MS = 150
/** Presence: a heartbeat every 30 s while the tracker runs. */
export const HEARTBEAT_MS = 30_000
/**
 * Replay payloads are split at about 1 MB of encoded JSON: their events' UTF-8 bytes (what the service's
 * body limits count, not JavaScript's UTF-16 characters, up to 3 bytes each).
 */
export const CHUNK_MAX_BYTES = 1_000_000

/** Who a batch belongs to: a batch never mixes sessions or end users. */
export interface Owner {
  sessionId: string
  endUserId: string
}

export interface Batcher<T> {
  add(item: T, owner: Owner, size?: number): void
  flush(): void
  clear(): void
}

/**
 * Collects items and hands them over `flushMs()` after the first one arrives (0: at once, with no
 * timer), or at once when `maxItems` items or `maxSize` of summed sizes are waiting, or when the owner
 * changes. A batch stays within `maxSize`: an item that would take it over starts the next one (an
 * item larger goes alone).
 */
export function createBatcher<T>(
  clock: Clock,
  flushMs: () => number,
  send: (items: T[], owner: Owner) => void,
  maxItems = Infinity,
  maxSize = Infinity,
): Batcher<T> {
  let items: T[] = []
  let size = 0
  let owner: Owner | undefined
  let timer: unknown
  const clear = () => {
    clock.clearTimeout(timer)
    timer = undefined
    const taken = items
    items = []
    size = 0
    return taken
  }
  const flush = () => {
    const taken = clear()
    if (taken.length) send(taken, owner!)
  }
  return {
    add(item, next, itemSize = 0) {
      // (No owner yet: nothing is waiting, and flush sends nothing.)
      if (size + itemSize > maxSize || owner?.sessionId != next.sessionId || owner?.endUserId != next.endUserId) flush()
      owner = next
      items.push(item)
      size += itemSize
      if (items.length >= maxItems || size >= maxSize) flush()
      else if (timer == null) {
        const wait = flushMs()
        if (wait) timer = clock.setTimeout(flush, wait)
        else flush()
      }
    },
    flush,
    clear,
  }
}

const LIST_FIELDS = ['events', 'logs', 'errors', 'spans']

/**
 * A body split in two halves of its item list, for a payload answered 413, or 400 for one of its
 * items. Null when there is nothing left to split. Each half keeps every other field (session, window,
 * `seq`): the pieces of a replay chunk share its number, in the order of their events' times. A new
 * number for a second half came after the chunks cut meanwhile, and halved again, the pieces of one
 * chunk interleaved (n, n+2, n+1): in seq order, the replay went back in time.
 */
export function halve(body: Record<string, unknown>): [Record<string, unknown>, Record<string, unknown>] | null {
  const field = LIST_FIELDS.find((name) => (body[name] as unknown[])?.length > 1)
  if (!field) return null
  const list = body[field] as unknown[]
  const middle = Math.ceil(list.length / 2)
  return [
    { ...body, [field]: list.slice(0, middle) },
    { ...body, [field]: list.slice(middle) },
  ]
}
