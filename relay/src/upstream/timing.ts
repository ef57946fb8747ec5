import { UpstreamError } from '../errors.ts'
import { deadlines, type IdleDeadline } from './deadlines.ts'

/** What the clock keeps on an exchange of the socket client. */
export interface TimedExchange {
  request: { timeoutMs: number }
  /** When the wait for the answer's head ends (`performance.now()`); Infinity while not waiting. */
  deadline: number
  /** The silence allowed while the answer's body streams; made on its first piece. */
  idle: IdleDeadline | null
}

/**
 * When the socket client gives up on core: `timeoutMs` is the longest core may stay silent while
 * the relay waits on it, as nginx's `proxy_read_timeout` is the time "between two successive read
 * operations, not for the transmission of the whole response". So the wait restarts with every
 * piece of a streamed request body (a slow upload is the client's pace), once the request is all
 * written, and with every byte of the answer: an interim 1xx (`100 Continue`, `103 Early Hints`),
 * part of a head, each read of the body. A core that sends `103` at once and its answer after the
 * usual time is not cut short, and one that goes silent mid-answer is given up: the body errors and
 * the connection is closed, never pooled. While the client is behind (the socket paused for
 * backpressure) nothing is due from core and the clock is held: a slow reader is its own pace.
 */
export function exchangeClock<T extends TimedExchange>(
  giveUp: (exchange: T, error: UpstreamError) => void,
  /**
   * Visits every exchange in flight (queued, connecting or on a connection). The wait for a head is a
   * number on the exchange, looked at by one coarse ticker: kept in a Set or a Map of the clock's
   * own instead, each request cost the relay about 2 µs more (measured on Bun, 10% of a small
   * request's forwarding); its connection and the queue hold it already.
   */
  inFlight: (visit: (exchange: T) => void) => void,
  tickMs = 25,
) {
  const timeouts = deadlines()
  let ticker: ReturnType<typeof setInterval> | undefined
  const tick = () => {
    const now = performance.now()
    let waiting = false
    const expired: T[] = []
    inFlight((exchange) => {
      if (exchange.deadline > now) waiting ||= exchange.deadline !== Infinity
      else expired.push(exchange)
    })
    for (const exchange of expired) {
      if (exchange.deadline === Infinity) continue // visited twice, or settled by the one before
      exchange.deadline = Infinity
      giveUp(exchange, new UpstreamError('timeout', `core did not answer within ${exchange.request.timeoutMs} ms`))
    }
    // Nothing left to time: the ticker stops, and the next `arm` starts it.
    if (!waiting && expired.length === 0) {
      clearInterval(ticker)
      ticker = undefined
    }
  }

  return {
    /** (Re)starts the wait for the answer's head. */
    arm(exchange: T): void {
      exchange.deadline = performance.now() + exchange.request.timeoutMs
      if (!ticker) {
        ticker = setInterval(tick, tickMs)
        // The ticker alone must not keep a process alive.
        ;(ticker as { unref?: () => void }).unref?.()
      }
    },

    /** Bytes of the streamed body are due again (a piece arrived, or the client caught up). */
    wait(exchange: T): void {
      const ms = exchange.request.timeoutMs
      exchange.idle ??= timeouts.idle(ms, () => giveUp(exchange, new UpstreamError('timeout', `core sent nothing for ${ms} ms in the middle of its answer`)))
      exchange.idle.restart()
    },

    /** The client is behind: core's silence is not core's fault until it catches up. */
    hold(exchange: T): void {
      exchange.idle?.stop()
    },

    /** Stops every clock of the exchange: it is over, or its answer is all here. */
    settle(exchange: T): void {
      exchange.deadline = Infinity
      exchange.idle?.stop()
    },
  }
}
