import { errorText, type Database } from '../../db'
import type { Logger } from '../../log'
import { sweepQuietWindows } from './store'

/**
 * How often the projects without presence traffic are swept (see sweepQuietWindows). A window is
 * quiet after LIVE_WINDOW_SECONDS (90 s), and a session it leaves is ended at its last beat whenever
 * the sweep comes, so the interval only decides how long such a session still reads as open: a
 * minute keeps that under three minutes of its last beat, as autovacuum's naptime looks once a
 * minute. Each sweep costs every process a transaction of a probe per project, and writes nothing
 * when nothing is quiet; it forgets every window quiet by then, over as many short transactions as
 * they take (see sweepQuietWindows), so that even a project whose thousands of windows went quiet at
 * once reads as closed a minute or so later.
 */
export const PRESENCE_SWEEP_INTERVAL_MS = 60_000

export interface PresenceSweepOptions {
  /** The default but in tests. */
  intervalMs?: number
}

export interface PresenceSweep {
  /** No further sweeps; waits for the one under way. */
  stop(): Promise<void>
}

/**
 * Sweeps every `intervalMs`, on both kinds of database; the timer does not keep the process alive. A
 * sweep still under way when the next is due (a slow or unreachable database) is not joined by
 * another. One that fails is tried again at the next tick, and a streak of failures is logged once:
 * a database down for an hour would otherwise log sixty times what /health already says.
 */
export function startPresenceSweep(db: Database, log: Logger, { intervalMs = PRESENCE_SWEEP_INTERVAL_MS }: PresenceSweepOptions = {}): PresenceSweep {
  let stopped = false
  let failing = false
  let sweeping: Promise<void> | undefined

  async function sweep() {
    // A backlog bigger than one interval's worth of transactions yields to the next tick, which goes
    // on with it; a stop waits for the transaction under way only.
    const until = performance.now() + intervalMs
    try {
      const { windows, batches } = await sweepQuietWindows(db, () => !stopped && performance.now() < until)
      if (failing) log.info('presence sweep works again')
      failing = false
      if (windows > 0) log.debug('presence sweep', { windows, batches })
    } catch (error) {
      // A sweep a stop went on without (see services.ts) fails as the database closes under it: that
      // is the stop, not trouble to report.
      if (stopped) return log.debug('presence sweep cut off by the stop', { error: errorText(error) })
      if (!failing) log.warn('presence sweep failed; trying again at every tick', { error: errorText(error) })
      failing = true
    }
  }

  const timer = setInterval(() => {
    if (stopped || sweeping) return
    sweeping = sweep().finally(() => (sweeping = undefined))
  }, intervalMs)
  timer.unref()

  return {
    async stop() {
      stopped = true
      clearInterval(timer)
      await sweeping
    },
  }
}
