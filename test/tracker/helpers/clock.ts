import type { Clock } from '@sightline/tracker'

export interface FakeClock extends Clock {
  /** Moves time forward, running every timer that falls due, in order, and what their promises start. */
  advance(ms: number): Promise<void>
  /** Timers waiting. */
  pending(): number[]
}

/** Lets promise chains (fetch answers, JSON parsing, compression streams) run to the end. */
export async function settle(rounds = 5) {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 1))
}

export function fakeClock(start = Date.UTC(2025, 0, 1, 12)): FakeClock {
  let now = start
  let nextId = 1
  const timers = new Map<number, { at: number; callback: () => void }>()
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const id = nextId++
      timers.set(id, { at: now + Math.max(0, ms), callback })
      return id
    },
    clearTimeout(handle) {
      timers.delete(handle as number)
    },
    async advance(ms) {
      const end = now + ms
      await settle(2)
      for (;;) {
        const due = [...timers.entries()].filter(([, timer]) => timer.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0]
        if (!due) break
        timers.delete(due[0])
        now = due[1].at
        due[1].callback()
        await settle(2)
      }
      now = end
      await settle(2)
    },
    pending: () => [...timers.values()].map((timer) => timer.at - now).sort((a, b) => a - b),
  }
}
