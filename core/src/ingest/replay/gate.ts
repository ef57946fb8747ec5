import { ApiError } from '../../errors'

/**
 * How many replay bodies are turned into stored chunks at once. Inflating, scanning and compressing
 * a chunk holds its decoded bytes (up to the upload limit, 5 MB by default) besides the bytes sent;
 * a few at a time keep both cores busy, and the memory that takes stays a few chunks' worth however
 * many clients send at once. The rest wait their turn with only the bytes they sent (usually gzip,
 * a fraction of the decoded size); past `maxWaitingBytes` of those, or `maxWaitMs` of waiting, a
 * request is answered 503 `overloaded` with `Retry-After`, which the tracker retries later.
 *
 * Reading a body is not part of a turn: a slow upload (a phone on a poor network) would hold a turn
 * for as long as it takes and stop everyone else's chunks.
 */
export interface Gate {
  /** Runs `work` in its turn; `heldBytes` is what the request holds while it waits. */
  run<T>(heldBytes: number, work: () => Promise<T>): Promise<T>
}

export interface GateOptions {
  concurrency: number
  maxWaitingBytes: number
  maxWaitMs: number
  retryAfterSeconds?: number
}

export function createGate({ concurrency, maxWaitingBytes, maxWaitMs, retryAfterSeconds = 1 }: GateOptions): Gate {
  let running = 0
  let waitingBytes = 0
  const waiting: (() => void)[] = []
  const overloaded = () => new ApiError('overloaded', 'too many replay chunks are waiting; nothing of this request was stored, retry later', { retryAfterSeconds })

  const turn = (heldBytes: number): Promise<void> => {
    if (running < concurrency) {
      running++
      return Promise.resolve()
    }
    if (waitingBytes > 0 && waitingBytes + heldBytes > maxWaitingBytes) return Promise.reject(overloaded())
    waitingBytes += heldBytes
    return new Promise((resolve, reject) => {
      const go = () => {
        clearTimeout(timer)
        waitingBytes -= heldBytes
        running++
        resolve()
      }
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(go), 1)
        waitingBytes -= heldBytes
        reject(overloaded())
      }, maxWaitMs)
      waiting.push(go)
    })
  }

  return {
    async run(heldBytes, work) {
      await turn(heldBytes)
      try {
        return await work()
      } finally {
        running--
        waiting.shift()?.()
      }
    },
  }
}
