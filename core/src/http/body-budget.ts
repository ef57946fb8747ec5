import { ApiError } from '../errors'

/**
 * The bytes of request bodies core holds at once, whatever route they came to: read, inflated and
 * parsed, from before they are read until their request is answered. Each body is bounded by its
 * route's limit, and the writer bounds its queue, but a body is held before its rows reach that
 * queue and while they wait in it: 2,000 replay chunks of 1 MB sent at once, or a slow database
 * that keeps requests waiting for their commit, would hold gigabytes, and the system's OOM killer
 * would end core and every connection with it. Past the budget a request is answered 503
 * `overloaded` with `Retry-After` before its body is read; the tracker and relay retry those.
 *
 * A body is charged by its Content-Length before a byte of it is read, as its bytes arrive when it
 * is sent without one (chunked), and again by what it inflates to. Its parsed form is not weighed
 * (that would cost a walk of every body): parsed JSON takes two to three times its text, which the
 * default budget allows for. Its charge is given back when its
 * request ends, however it ends (answered, failed, or its client gone: `release`).
 *
 * Big bodies do not starve small ones: they may fill the budget only up to `smallBodyReserve` short
 * of it, and that last part is for bodies of at most `SMALL_BODY_BYTES` (custom events, logs,
 * heartbeats), so a flood of replay chunks or source maps is answered 503 while a tracker's other
 * requests go on being served. Small bodies can starve big ones only by filling the whole budget,
 * tens of thousands of them at once, which is an overload whatever is refused. Requests are refused
 * rather than queued: a request waiting for room holds its connection and its client's patience, and
 * a 503 tells the client to come back when there is room. A body is never refused when it is the only
 * one held, so a budget below a route's limit slows uploads down to one at a time, never refuses them all.
 */
export interface BodyBudget {
  /** Charges `bytes` more to `request`; throws 503 `overloaded`, charging nothing, when the budget cannot take them. */
  charge(request: Request, bytes: number): void
  /** Gives back everything charged to `request`. Safe to call more than once, and for a request never charged. */
  release(request: Request): void
}

/**
 * Twice the writer's queue (128 MB of rows), which holds what requests waiting for their commit
 * bring: their bodies are held meanwhile, besides what is being read and what commits in flight
 * hold. About what 256 concurrent 1 MB bodies take; parsed, and with core's own 200 MB or so, a full
 * budget keeps core well under a gigabyte (measured: under 500 MB with 1,000 clients sending 1 MB
 * bodies to a database that does not answer, against 1.2 GB and growing without it).
 */
export const DEFAULT_BODY_MEMORY_BYTES = 256 * 1024 * 1024

/** A body this size or smaller is a small one, which the reserve is kept for. */
export const SMALL_BODY_BYTES = 64 * 1024

/** The part of the budget that only small bodies may take: an eighth, 32 MB of the default 256 MB. */
export const smallBodyReserve = (maxBytes: number) => Math.floor(maxBytes / 8)

export function createBodyBudget(maxBytes: number, retryAfterSeconds = 1): BodyBudget {
  const bigBodyRoom = maxBytes - smallBodyReserve(maxBytes)
  let held = 0
  const charges = new WeakMap<Request, number>()
  return {
    charge(request, bytes) {
      const own = charges.get(request) ?? 0
      const room = own + bytes <= SMALL_BODY_BYTES ? maxBytes : bigBodyRoom
      if (held - own > 0 && held + bytes > room) {
        throw new ApiError('overloaded', 'too many request bodies are held at once; nothing of this request was stored, retry later', { retryAfterSeconds })
      }
      held += bytes
      charges.set(request, own + bytes)
    },
    release(request) {
      const own = charges.get(request)
      if (own === undefined) return
      charges.delete(request)
      held -= own
    },
  }
}
