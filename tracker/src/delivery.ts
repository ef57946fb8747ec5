import type { Logger } from './log'
import { halve } from './queue'
import type { Outbox, Parcel } from './storage'
import type { Answer, Transport } from './transport'
import type { Clock, Dropped } from './types'

/** Retries back off exponentially from 1 s to at most a minute, with jitter; the fifth failure persists. */
export const RETRY_BASE_MS = 1000
export const RETRY_MAX_MS = 60_000
export const MAX_ATTEMPTS = 5
/**
 * A kept parcel that failed by itself on this many page loads is given up (`dropped.failed`): one the
 * service, or a proxy in front of it, fails every time (a body that crashes it) would otherwise go
 * again on every page load for as long as the outbox has room. By itself: a 500 or 408, or no answer or
 * a gateway's (502 to 504) while the service takes other requests; never a service that is down, a
 * browser offline, or a wait asked for (Retry-After, 429): nothing is the parcel's fault then. Counted
 * once a page load (that page does not send it again), after the MAX_ATTEMPTS of the page that made
 * it: ten loads give a fix on the service time to come first, for all but the busiest visitors. Not by
 * age: core takes events of any age, and one kept offline for weeks, which never failed, is still worth
 * storing (the outbox's size bound holds what is kept).
 */
export const OUTBOX_MAX_FAILURES = 10

/** Milliseconds a `Retry-After` header asks for (delta-seconds or an HTTP date), or null. */
export function retryAfterMs(header: string | null | undefined, now: number, ms = +header! * 1000 || Date.parse(header!) - now): number | null {
  // Not a number of seconds (NaN), a date; none (NaN both ways) is null. Written so for the bundle's
  // size, as the tracker is at its budgets: "0" is read as a date too, long past (0) or not one (null),
  // and either is no wait. (`ms` is a local, a parameter for the same reason: callers pass two.)
  return isNaN(ms) ? null : Math.max(0, ms)
}

/** The wait before retry `attempt` (0-based): half fixed, half random, never shorter than Retry-After. */
export function retryDelay(attempt: number, random: number, retryAfter: number | null): number {
  const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempt) * (0.5 + random / 2)
  return Math.max(backoff, retryAfter!)
}

export type StopReason = 'monthly_limit' | 'invalid_key'

export type Delivery = ReturnType<typeof createDelivery>

/**
 * Gets parcels to the service: retries network failures and 5xx with backoff, halves what is too
 * large or refused for one of its items (until that item goes alone), persists what cannot be sent
 * (offline, unloading, stopped, out of attempts) and sends it again when the browser is back online
 * or on the next page load. Parcels carry their event uuids
 * and chunk `seq`, so a parcel sent twice is stored once. 429 and an invalid key stop all sending.
 */
export function createDelivery(
  transport: Transport,
  outbox: Outbox,
  clock: Clock,
  log: Logger,
  /** Every readable success answer (`liveViewer`, `monthlyLimitReached`). */
  answered: (data: Record<string, unknown>) => void,
  /** Sending has stopped for good on this page. */
  stopped: (reason: StopReason) => void,
  /**
   * Runs a drain unless another tab of the origin is draining the same outbox (default: it runs). The
   * outbox is the drain's until the promise it returns settles: when what was kept is sent, or at once
   * when the page is hidden.
   */
  alone: (drain: () => Promise<void>) => Promise<unknown> = (drain) => drain(),
  random = Math.random,
) {
  let halted: StopReason | null = null
  let draining = false
  /**
   * The service asked (Retry-After) for nothing before then: every send waits until it, not only the
   * one it answered. For a minute at most: a longer wait keeps what it answered in the outbox (see
   * retry), and the next send, a minute on, asks again.
   */
  let notBefore = 0
  /** What the latest failed answer asked for (Retry-After), read by deliver right after settle. */
  let retryAfter: number | null = null
  /**
   * The tracker is stopped: no page hide will persist what waits in memory, so a failure goes to the
   * outbox at once, as on unload, and nothing is drained until it starts again.
   */
  let paused = false
  /**
   * Hidden (`persistPending`) until `shown`: a drain under way lets go of the outbox at once (`letGo`),
   * without waiting for the answer to its send, and none begins. Chromium evicts a page from its
   * back/forward cache when another page uses a lock it holds, and a page shown again from the cache
   * may use it before the page it replaces is even told it is hidden: so a page shown does not drain
   * at once either (the heartbeat's answer drains), and nothing drains with nothing kept.
   */
  let hidden = false
  let letGo = () => {}
  const inFlight = new Map<string, Parcel>()
  const waiting = new Map<string, { parcel: Parcel; timer: unknown }>()
  /**
   * Kept in the outbox, a failure left to it: in flight when the page was hidden (the outbox holds a
   * copy); or drained and failed by itself (see failed), which a drain of this page goes past: every
   * success drains, and would send it again and again (every 150 ms with a live viewer), for as long as
   * the page is open. The next page tries it again, up to OUTBOX_MAX_FAILURES.
   */
  const persisted = new Set<string>()
  /**
   * The kept parcel the latest drain stopped at (no answer, 502 to 504); since a success came (the
   * service answers others), the same parcel, which fails by itself where a drain stops there again
   * (see deliver).
   */
  let stuck: string | undefined
  let unstuck: string | undefined
  const drops: Omit<Dropped, 'outbox' | 'error_flood'> = {}

  const drop = (reason: keyof typeof drops, parcel: Parcel) => {
    outbox.remove(parcel.id)
    drops[reason] = (drops[reason] ?? 0) + 1
    log.warn(`dropped a request to ${parcel.path}: ${reason}`)
    // deliver's answer for a parcel the service refused (falsy, so a drain goes on): identify undoes it.
    return 0 as const
  }
  /**
   * A drained parcel failed by itself: gone past by this page's drains (persisted), and kept counted,
   * or dropped at OUTBOX_MAX_FAILURES. Falsy: a drain goes on.
   */
  const failed = (parcel: Parcel) =>
    persisted.add(parcel.id) && (parcel.failed = (parcel.failed ?? 0) + 1) < OUTBOX_MAX_FAILURES ? outbox.put(parcel) : drop('failed', parcel)
  /** Cancels the retries waiting; with `keep`, their parcels go to the outbox. */
  const cancel = (keep: boolean) => {
    for (const { parcel, timer } of waiting.values()) {
      clock.clearTimeout(timer)
      if (keep) outbox.put(parcel)
    }
    waiting.clear()
  }
  /** A refused key is the site's to fix, said as an error; the monthly limit stops sending quietly. */
  const halt = (reason: StopReason) => {
    if (halted) return
    halted = reason
    log[reason == 'invalid_key' ? 'error' : 'info']('sending stopped: ' + reason)
    cancel(false)
    stopped(reason)
  }

  /**
   * `attempt` MAX_ATTEMPTS: a parcel drained from the outbox, which keeps it until it is stored. Truthy
   * when a drain should stop there: that parcel stays kept, and so would the ones after it; 0 when it
   * was dropped, refused by the service.
   */
  async function deliver(parcel: Parcel, unload = false, attempt = 0): Promise<unknown> {
    const drained = attempt === MAX_ATTEMPTS
    const keep = () => drained || outbox.put(parcel)
    /** Try `next` after `wait`; kept instead where no timer is to wait (see the end). */
    const retry = (wait: number, next: number) => {
      // A Retry-After past the longest backoff (a proxy asking for an hour) would hold every parcel of
      // that time in memory; the bounded outbox keeps them instead, until the service answers again.
      if (unload || paused || next >= MAX_ATTEMPTS || wait > RETRY_MAX_MS) return keep()
      const timer = clock.setTimeout(() => {
        waiting.delete(parcel.id)
        void deliver(parcel, false, next)
      }, wait)
      waiting.set(parcel.id, { parcel, timer })
    }
    if (halted) return
    if (!transport.online()) return keep()
    // Not an attempt: the service asked to be left alone meanwhile.
    const hold = notBefore - clock.now()
    if (hold > 0) return retry(hold, attempt)
    inFlight.set(parcel.id, parcel)
    // Drained (it was kept in the outbox): never by a beacon, whose 202 would delete it unseen.
    const answer = await transport.send(parcel.path, parcel.body, unload, drained)
    inFlight.delete(parcel.id)
    const wasPersisted = persisted.delete(parcel.id)
    if (settle(answer)) {
      // The kept copy is no longer needed; the service answers, so what else is kept may go now (not on unload).
      outbox.remove(parcel.id)
      if (!unload) void drain()
      return
    }
    if (halted || wasPersisted) return
    const { status } = answer
    // Too large, or refused for one item of its list (a 400's path names it: `/events/3/eventName`):
    // halved until what fails goes alone, and the rest is stored.
    if (status === 413 || /\/\d/.test(answer.data?.path as string)) {
      const halves = halve(parcel.body)?.map((body, i) => ({ ...parcel, id: parcel.id + '.' + i, body }))
      if (halves) {
        // Drained, its halves take its place in the outbox, which keeps them until each is stored: in
        // first, so a parcel split in two is never only in memory.
        if (drained) {
          halves.forEach(outbox.put)
          outbox.remove(parcel.id)
        }
        await Promise.all(halves.map((half) => deliver(half, unload, drained ? attempt : 0)))
        return
      }
      if (status === 413) return answer.local ? keep() : drop('too_large', parcel)
    }
    if (status && status < 500 && status != 408) return drop(`rejected_${status}`, parcel)
    // No answer, or a service that cannot take anything now (502 to 504, 503 with Retry-After): a
    // drain goes no further. But where a drain stopped at this one before, though the service took
    // something since (unstuck), it fails by itself (a gateway timing out on it), unless asked to wait:
    // as a 500 (or 408), this request's own failure, it is counted (see failed) and gone past.
    return retry(retryDelay(attempt, random(), retryAfter), attempt + 1) && ((!status || status > 500) && (parcel.id != unstuck || retryAfter) || failed(parcel))
  }

  /**
   * What every answer says beyond its own request (the heartbeat's too): 429 or `monthlyLimitReached`
   * stop all sending, so does a refused key (401, `missing_api_key` or `invalid_api_key`: the service
   * says nothing else with 401); a Retry-After holds every send; a success's fields are passed on.
   * True for a success. A 403 is not the key's: WAFs and CDNs answer it to some requests, and only
   * that parcel is dropped.
   */
  function settle(answer: Answer): boolean {
    const { status, data } = answer
    if (status == 429 || data?.monthlyLimitReached) halt('monthly_limit')
    if (status == 401) {
      halt('invalid_key')
      // Revoked or rotated: what this key kept can never be stored, and a page with the new key reads
      // another outbox; kept, it would hold its part of the origin's localStorage for good.
      if ((data?.error as { code?: string })?.code == 'invalid_api_key') outbox.all().forEach((parcel) => drop(`rejected_${status}`, parcel))
    }
    // Not 2xx (its hundreds; written so for the bundle's size, as the tracker is at its budgets).
    if ((status / 100 | 0) != 2) {
      retryAfter = retryAfterMs(answer.retryAfter, clock.now())
      if (retryAfter) notBefore = clock.now() + Math.min(retryAfter, RETRY_MAX_MS)
      return false
    }
    if (data) answered(data)
    unstuck = stuck
    return true
  }

  /**
   * Sends what was kept, oldest first, one attempt each, when the browser is online. A parcel leaves
   * the outbox only when it is stored (or dropped): a page that dies while draining loses nothing, and
   * one sent twice is stored once. One that fails stays where it is, written again only when it failed
   * by itself (with its count, see failed), and where the
   * service did not take it (no answer, 502 to 504, Retry-After) the drain stops there: the next
   * success, heartbeat or `online` drains again, in a page in view (see `hidden`). The tabs of an
   * origin share the outbox, and all of them drain when the browser is back online: one at a time
   * (`alone`), or each would send every parcel. It goes past what is `persisted`: parcels refused for
   * their own sake, and those in flight when the page was hidden (the only kept parcels ever in
   * flight when a drain begins: drains never overlap, and one ends before its send only on hide).
   */
  async function drain() {
    if (draining || paused || hidden || !outbox.size() || !transport.online()) return
    draining = true
    try {
      await alone(async () => {
        for (const parcel of outbox.all()) {
          if (paused || hidden) break
          // Hidden meanwhile (letGo): the drain ends at once; the answer settles the parcel by itself.
          if (persisted.has(parcel.id) || !(await Promise.race([deliver(parcel, false, MAX_ATTEMPTS), new Promise<void>((resolve) => (letGo = resolve))]))) continue
          stuck = parcel.id
          break
        }
      })
    } finally {
      draining = false
    }
  }

  return {
    deliver,
    drain,
    settle,
    /**
     * The page is being hidden or unloaded, or (`stop`) the tracker stops: everything not yet delivered
     * is persisted; once stopped, until `resume`, what fails goes to the outbox at once, and nothing drains.
     */
    persistPending(stop = false) {
      paused = stop
      hidden = !stop
      letGo()
      cancel(true)
      for (const parcel of inFlight.values()) {
        outbox.put(parcel)
        persisted.add(parcel.id)
      }
    },
    /** The page is shown again after `persistPending`. */
    shown() {
      hidden = false
    },
    /** The tracker runs (again): what was kept is sent. */
    resume() {
      paused = false
      return drain()
    },
    /**
     * Whether what is not kept may go now: online, and the service asked for no wait (Retry-After).
     * Presence (heartbeat, session-end) is sent only then: it is sent again, or times out, anyway.
     */
    get canSend() {
      return transport.online() && notBefore <= clock.now()
    },
    /** Why sending stopped for good, if it did. */
    get halted() {
      return halted
    },
    /** Stopped or halted: nothing is to wait in memory. */
    get idle() {
      return paused || !!halted
    },
    drops: () => ({ ...drops }),
  }
}
