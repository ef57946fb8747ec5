import { describe, expect, test } from 'bun:test'
import { CHUNK_MAX_BYTES, createBatcher, halve, type Owner } from '@sightline/tracker/queue'
import { chunkBySize } from '../bench/lib/chunks'
import { fakeClock } from './helpers/clock'

const alice: Owner = { sessionId: 's1', endUserId: 'alice' }

describe('batcher', () => {
  test('flushes flushMs after the first item, not after the last', async () => {
    const clock = fakeClock()
    const batches: number[][] = []
    const batcher = createBatcher<number>(clock, () => 100, (items) => batches.push(items), 50)
    batcher.add(1, alice)
    await clock.advance(60)
    batcher.add(2, alice)
    await clock.advance(39)
    expect(batches).toEqual([])
    await clock.advance(1)
    expect(batches).toEqual([[1, 2]])
    expect(clock.pending()).toEqual([])
  })

  test('flushes at once at maxItems, and at maxSize of summed sizes', async () => {
    const clock = fakeClock()
    const batches: number[][] = []
    const byCount = createBatcher<number>(clock, () => 100, (items) => batches.push(items), 3)
    for (const n of [1, 2, 3, 4]) byCount.add(n, alice)
    expect(batches).toEqual([[1, 2, 3]])
    const bySize = createBatcher<number>(clock, () => 100, (items) => batches.push(items), Infinity, 10)
    bySize.add(5, alice, 6)
    bySize.add(6, alice, 4)
    expect(batches).toEqual([[1, 2, 3], [5, 6]])
  })

  test('a batch stays within maxSize: an item that would take it over starts the next one, a larger one goes alone', () => {
    const clock = fakeClock()
    const batches: number[][] = []
    const batcher = createBatcher<number>(clock, () => 100, (items) => batches.push(items), Infinity, 8)
    for (const n of [4, 4, 4, 9, 1, 1]) batcher.add(n, alice, n)
    batcher.flush()
    // The same runs chunkBySize makes of them.
    expect(batches).toEqual([[4, 4], [4], [9], [1, 1]])
    expect(batches).toEqual(chunkBySize([4, 4, 4, 9, 1, 1], (n) => n, 8))
  })

  test('a new session or end user starts a new batch, and the batch carries its owner', () => {
    const clock = fakeClock()
    const batches: [number[], Owner][] = []
    const batcher = createBatcher<number>(clock, () => 100, (items, owner) => batches.push([items, owner]))
    batcher.add(1, alice)
    batcher.add(2, { ...alice, sessionId: 's2' })
    batcher.add(3, { sessionId: 's2', endUserId: 'bob' })
    batcher.flush()
    expect(batches).toEqual([
      [[1], alice],
      [[2], { sessionId: 's2', endUserId: 'alice' }],
      [[3], { sessionId: 's2', endUserId: 'bob' }],
    ])
  })

  test('flushMs is read for each batch (the replay interval changes with liveViewer)', async () => {
    const clock = fakeClock()
    let interval = 3000
    const batches: number[][] = []
    const batcher = createBatcher<number>(clock, () => interval, (items) => batches.push(items))
    batcher.add(1, alice)
    expect(clock.pending()).toEqual([3000])
    await clock.advance(3000)
    interval = 150
    batcher.add(2, alice)
    expect(clock.pending()).toEqual([150])
  })

  test('a wait of 0 hands each item over at once, with no timer (a stopped tracker)', () => {
    const clock = fakeClock()
    const batches: number[][] = []
    const batcher = createBatcher<number>(clock, () => 0, (items) => batches.push(items))
    batcher.add(1, alice)
    batcher.add(2, alice)
    expect([batches, clock.pending()]).toEqual([[[1], [2]], []])
  })

  test('clear drops what waits and its timer', () => {
    const clock = fakeClock()
    const batches: number[][] = []
    const batcher = createBatcher<number>(clock, () => 100, (items) => batches.push(items))
    batcher.add(1, alice)
    batcher.clear()
    batcher.flush()
    expect(batches).toEqual([])
    expect(clock.pending()).toEqual([])
  })
})

describe("the replay bench's chunkBySize", () => {
  test('keeps order and keeps each chunk within the limit; a larger item goes alone', () => {
    const size = (n: number) => n
    expect(chunkBySize([4, 4, 4, 9, 1, 1], size, 8)).toEqual([[4, 4], [4], [9], [1, 1]])
    expect(chunkBySize([], size, 8)).toEqual([])
  })

  test('replay payloads split at about 1 MB of encoded JSON', () => {
    const event = { type: 3, timestamp: 1, data: { text: 'x'.repeat(300_000) } }
    const events = Array.from({ length: 7 }, () => event)
    const chunks = chunkBySize(events, (e) => JSON.stringify(e).length, CHUNK_MAX_BYTES)
    expect(chunks.map((c) => c.length)).toEqual([3, 3, 1])
    for (const chunk of chunks) expect(JSON.stringify(chunk).length).toBeLessThan(CHUNK_MAX_BYTES + 100)
  })
})

describe('halve', () => {
  test('splits the item list, keeps every other field', () => {
    const body = { sessionId: 's', windowId: 'w', seq: 4, events: [1, 2, 3] }
    expect(halve(body)).toEqual([
      { sessionId: 's', windowId: 'w', seq: 4, events: [1, 2] },
      { sessionId: 's', windowId: 'w', seq: 4, events: [3] },
    ])
    expect(halve({ sessionId: 's', logs: ['a', 'b'] })).toEqual([{ sessionId: 's', logs: ['a'] }, { sessionId: 's', logs: ['b'] }])
  })

  test('nothing to split: null', () => {
    expect(halve({ events: [1] })).toBeNull()
    expect(halve({ userId: 'u' })).toBeNull()
  })
})
