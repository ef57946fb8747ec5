import { afterEach, expect, test } from 'bun:test'
import { startMemoryGuard } from '@sightline/core/memory'

const MB = 1024 * 1024
const realRss = process.memoryUsage.rss
const realGc = Bun.gc
afterEach(() => {
  process.memoryUsage.rss = realRss
  Bun.gc = realGc
})

/** A resident size the test sets, and the collections the guard asks for (each leaves `afterGc`). */
function fakeProcess() {
  const state = { rss: 100 * MB, afterGc: 100 * MB, collections: 0 }
  process.memoryUsage.rss = () => state.rss
  Bun.gc = (() => {
    state.collections++
    state.rss = state.afterGc
    return 0
  }) as typeof Bun.gc
  return state
}

test('the memory guard collects once the process is past the floor and has grown the headroom since the last collection', async () => {
  const state = fakeProcess()
  const stop = startMemoryGuard({ floorBytes: 128 * MB, headroomBytes: 48 * MB, intervalMs: 5 })
  try {
    // Under the floor: left alone, however it grows.
    state.rss = 120 * MB
    await Bun.sleep(30)
    expect(state.collections).toBe(0)
    // Past the floor: a collection, which leaves 110 MB.
    state.rss = 140 * MB
    state.afterGc = 110 * MB
    await Bun.sleep(30)
    expect(state.collections).toBe(1)
    // Holding steady past the floor but within the headroom of what the collection left: left alone.
    state.rss = 150 * MB
    await Bun.sleep(30)
    expect(state.collections).toBe(1)
    // Grown by the headroom: another one.
    state.rss = 160 * MB
    await Bun.sleep(30)
    expect(state.collections).toBe(2)
  } finally {
    stop()
  }
  state.rss = 500 * MB
  await Bun.sleep(30)
  expect(state.collections).toBe(2)
})
