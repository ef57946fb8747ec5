import { describe, expect, test } from 'bun:test'
import { ApiError } from '@sightline/core/errors'
import { createGate } from '@sightline/core/ingest/replay/gate'

/** A piece of work that runs until `finish()`. */
function held() {
  let finish!: () => void
  const done = new Promise<void>((resolve) => (finish = resolve))
  return { work: () => done, finish }
}

const overloaded = (error: unknown) => error instanceof ApiError && error.code === 'overloaded' && error.status === 503 && error.details.retryAfterSeconds === 1

describe('replay gate', () => {
  test('runs at most `concurrency` at once; the rest run in order as turns free up', async () => {
    const gate = createGate({ concurrency: 2, maxWaitingBytes: 1_000, maxWaitMs: 5_000 })
    const running: number[] = []
    const pieces = Array.from({ length: 5 }, () => held())
    const started: number[] = []
    const runs = pieces.map((piece, i) =>
      gate.run(10, async () => {
        started.push(i)
        running.push(i)
        await piece.work()
        running.splice(running.indexOf(i), 1)
        return i
      }),
    )
    await Bun.sleep(5)
    expect(started).toEqual([0, 1])
    pieces[1].finish()
    await Bun.sleep(5)
    expect(started).toEqual([0, 1, 2])
    pieces.forEach((p) => p.finish())
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4])
    expect(started).toEqual([0, 1, 2, 3, 4])
  })

  test('a turn is given back when the work fails', async () => {
    const gate = createGate({ concurrency: 1, maxWaitingBytes: 1_000, maxWaitMs: 5_000 })
    await expect(gate.run(1, () => Promise.reject(new Error('bad body')))).rejects.toThrow('bad body')
    expect(await gate.run(1, async () => 'next')).toBe('next')
  })

  test('past `maxWaitingBytes` held by waiting requests, a request is refused with 503 overloaded at once', async () => {
    const gate = createGate({ concurrency: 1, maxWaitingBytes: 100, maxWaitMs: 5_000 })
    const busy = held()
    const first = gate.run(1_000, busy.work)
    const waiting = gate.run(60, async () => 'waited')
    const refused = gate.run(60, async () => 'never')
    expect(await refused.catch((e) => overloaded(e))).toBe(true)
    busy.finish()
    await first
    expect(await waiting).toBe('waited')
    // Nothing waits any more: the bytes it held are free again.
    const again = held()
    const running = gate.run(1, again.work)
    const next = gate.run(90, async () => 'fits')
    again.finish()
    await running
    expect(await next).toBe('fits')
  })

  test('a request larger than the waiting limit may still wait alone', async () => {
    const gate = createGate({ concurrency: 1, maxWaitingBytes: 100, maxWaitMs: 5_000 })
    const busy = held()
    const first = gate.run(1, busy.work)
    const large = gate.run(5_000, async () => 'large')
    busy.finish()
    await first
    expect(await large).toBe('large')
  })

  test('a request that waits longer than `maxWaitMs` is refused with 503 overloaded and leaves the queue', async () => {
    const gate = createGate({ concurrency: 1, maxWaitingBytes: 100, maxWaitMs: 30 })
    const busy = held()
    const first = gate.run(1, busy.work)
    const late = gate.run(90, async () => 'never')
    expect(await late.catch((e) => overloaded(e))).toBe(true)
    // Its bytes no longer count against the limit.
    const next = gate.run(90, async () => 'next')
    busy.finish()
    await first
    expect(await next).toBe('next')
  })
})
