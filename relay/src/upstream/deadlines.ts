/**
 * Timeouts for many in-flight exchanges on one coarse ticker instead of a timer each: arming and
 * clearing a runtime timer per request costs more than the rest of forwarding a small request on
 * Bun. A deadline fires within `tickMs` after it passes. Deadlines are durations, kept on a clock that
 * only goes forward: on the wall clock, one set ahead an hour (NTP, a resumed virtual machine) failed
 * every request in flight with 504 at once, and one set back left core's silences unbounded for the hour.
 */
export interface Deadlines {
  /** Calls `onExpire` once, soon after `ms` from now, unless cancelled. Returns the cancel. */
  after(ms: number, onExpire: () => void): () => void
  /**
   * A deadline restarted often (on every read of a streamed answer): `restart` moves it to `ms` from
   * now without allocating, `stop` holds it until the next `restart`. Expiring stops it.
   */
  idle(ms: number, onExpire: () => void): IdleDeadline
}

export interface IdleDeadline {
  restart(): void
  stop(): void
}

export function deadlines(tickMs = 25): Deadlines {
  const pending = new Map<() => void, number>()
  let ticker: ReturnType<typeof setInterval> | undefined

  const tick = () => {
    const now = performance.now()
    for (const [onExpire, at] of pending) {
      if (at > now) continue
      pending.delete(onExpire)
      onExpire()
    }
    if (pending.size === 0) {
      clearInterval(ticker)
      ticker = undefined
    }
  }

  const schedule = (entry: () => void, ms: number) => {
    pending.set(entry, performance.now() + ms)
    if (!ticker) {
      ticker = setInterval(tick, tickMs)
      // The ticker alone must not keep a process alive.
      ;(ticker as { unref?: () => void }).unref?.()
    }
  }

  return {
    after(ms, onExpire) {
      // Each registration is its own entry, even when the same callback is registered twice.
      const entry = () => onExpire()
      schedule(entry, ms)
      return () => void pending.delete(entry)
    },
    idle(ms, onExpire) {
      const entry = () => onExpire()
      return {
        restart: () => schedule(entry, ms),
        stop: () => void pending.delete(entry),
      }
    },
  }
}
