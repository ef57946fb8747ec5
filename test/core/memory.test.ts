import { expect, test } from 'bun:test'
import { startMemoryGuard, type MemoryRuntime } from '@sightline/core/memory'

const MB = 1024 * 1024

/** A resident size the test sets, and the collections the guard asks for (each leaves `after`). */
function fakeRuntime() {
  const state = { resident: 100 * MB, after: 100 * MB, asked: [] as ('keep' | 'back')[] }
  const collect = (kind: 'keep' | 'back') => {
    state.asked.push(kind)
    state.resident = state.after
  }
  const runtime: MemoryRuntime = {
    residentBytes: () => state.resident,
    collectKeepingPages: () => collect('keep'),
    collectHandingPagesBack: () => collect('back'),
  }
  return { state, runtime }
}

async function settle(state: { resident: number; after: number }, resident: number, after = resident) {
  state.resident = resident
  state.after = after
  await Bun.sleep(30)
}

test('the memory guard collects past the floor once grown by the headroom, keeping pages under the ceiling and handing them back from it', async () => {
  const { state, runtime } = fakeRuntime()
  const stop = startMemoryGuard({ floorBytes: 128 * MB, headroomBytes: 32 * MB, ceilingBytes: 176 * MB, intervalMs: 5 }, runtime)
  try {
    // Under the floor: left alone, however it grows.
    await settle(state, 120 * MB)
    expect(state.asked).toEqual([])
    // Past the floor, under the ceiling: a collection that keeps the pages it frees (so the size stays).
    await settle(state, 140 * MB)
    expect(state.asked).toEqual(['keep'])
    // Within the headroom of what it left: left alone.
    await settle(state, 160 * MB)
    expect(state.asked).toEqual(['keep'])
    // Kept pages that reach the ceiling go back at once, before the headroom is used up.
    await settle(state, 176 * MB, 120 * MB)
    expect(state.asked).toEqual(['keep', 'back'])
    // Grown by the headroom past what that left, under the ceiling: kept again.
    await settle(state, 152 * MB)
    expect(state.asked).toEqual(['keep', 'back', 'keep'])
    await settle(state, 180 * MB, 170 * MB)
    expect(state.asked).toEqual(['keep', 'back', 'keep', 'back'])
    // Past the ceiling after pages went back (the embedded database lives there): only the headroom
    // decides, so a process that holds steady up there is not collected over and over.
    await settle(state, 190 * MB)
    expect(state.asked).toEqual(['keep', 'back', 'keep', 'back'])
    await settle(state, 202 * MB, 190 * MB)
    expect(state.asked).toEqual(['keep', 'back', 'keep', 'back', 'back'])
    await settle(state, 200 * MB)
    expect(state.asked).toEqual(['keep', 'back', 'keep', 'back', 'back'])
  } finally {
    stop()
  }
  await settle(state, 500 * MB)
  expect(state.asked).toHaveLength(5)
})
