import { UpstreamError } from '../errors.ts'
import { deadlines, type IdleDeadline } from './deadlines.ts'

/** What the clock keeps on an exchange of the socket client. */
export interface TimedExchange {
  request: { timeoutMs: number }
  /** Cancels the wait for the answer's head. */
  timer: (() => void) | undefined
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
export function exchangeClock<T extends TimedExchange>(giveUp: (exchange: T, error: UpstreamError) => void) {
  const timeouts = deadlines()

  return {
    /** (Re)starts the wait for the answer's head. */
    arm(exchange: T): void {
      exchange.timer?.()
      exchange.timer = timeouts.after(exchange.request.timeoutMs, () => giveUp(exchange, new UpstreamError('timeout', `core did not answer within ${exchange.request.timeoutMs} ms`)))
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
      exchange.timer?.()
      exchange.timer = undefined
      exchange.idle?.stop()
    },
  }
}
