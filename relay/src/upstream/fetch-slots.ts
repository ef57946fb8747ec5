import { UpstreamError } from '../errors.ts'
import type { Deadlines } from './deadlines.ts'
import { checkLimits, Slots, type SlotLimits } from './slots.ts'
import type { UpstreamRequest } from './types.ts'

/**
 * The fetch client's bound on exchanges in flight to one upstream, the socket client's limits
 * (slots.ts) counted in exchanges: `fetch` opens a connection for each exchange that finds none
 * idle, so at most `maxConnections` exchanges in flight is at most that many connections. Without
 * it a burst of N clients through the Node or Deno adapter opened N connections to core at once and
 * nothing was ever refused. An exchange holds its slot until it ends: its answer's body read to the
 * end, cancelled or failed (fetch.ts), since until then its connection is busy.
 */

/** A request queued for a slot: `grant` hands it the slot of an exchange that ended. */
interface Waiter {
  grant(): void
}

export interface FetchSlots {
  /** Null when the request holds a slot at once; else a wait that rejects (overloaded, client gone) or resolves holding one. */
  take(request: UpstreamRequest): Promise<void> | null
  /** Lets go of a slot taken for this origin: to the first waiter, else freed. Call once per slot. */
  free(origin: string): void
}

export function fetchSlots(limits: SlotLimits, timeouts: Deadlines): FetchSlots {
  const { maxConnections, maxQueued } = checkLimits(limits)
  const byOrigin = new Map<string, Slots<Waiter>>()
  const slotsOf = (origin: string): Slots<Waiter> => {
    let slots = byOrigin.get(origin)
    if (!slots) byOrigin.set(origin, (slots = new Slots<Waiter>(maxConnections, maxQueued)))
    return slots
  }

  function queue(slots: Slots<Waiter>, request: UpstreamRequest): Promise<void> {
    // A read body is not watched once sent (index.ts), but a client gone while it waits leaves the queue.
    const signal = request.signal ?? request.incoming?.signal ?? null
    if (signal?.aborted) return Promise.reject(new UpstreamError('aborted', 'the client went away'))
    return new Promise<void>((resolve, reject) => {
      const onGone = () => leave(new UpstreamError('aborted', 'the client went away'))
      const waiter: Waiter = {
        grant() {
          stopWaiting()
          resolve()
        },
      }
      if (!slots.wait(waiter)) return reject(new UpstreamError('overloaded', `more than ${maxQueued} requests are waiting for one of ${maxConnections} connections to core`))
      // Core was never asked: past timeoutMs in the queue it is the relay that is full, not core that is slow.
      const cancelTimer = timeouts.after(request.timeoutMs, () => leave(new UpstreamError('overloaded', `no connection to core came free within ${request.timeoutMs} ms`)))
      signal?.addEventListener('abort', onGone, { once: true })
      function stopWaiting() {
        cancelTimer()
        signal?.removeEventListener('abort', onGone)
      }
      function leave(error: UpstreamError) {
        slots.leave(waiter)
        stopWaiting()
        reject(error)
      }
    })
  }

  return {
    take(request) {
      const slots = slotsOf(request.origin)
      return slots.take() ? null : queue(slots, request)
    },
    free(origin) {
      slotsOf(origin).free()?.grant()
    },
  }
}
