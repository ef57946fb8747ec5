import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * What WIRE.md leaves unbounded in an error report (how many frames, how long a frame's names, the
 * client's fingerprint) is taken and cut or digested, never a reason to refuse the report's batch.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/errors', body)
  expect(res.status).toBe(200)
  return (await res.json()) as { accepted: number; issues: string[] }
}
const APP = 'https://shop.example/assets/app.min.js'
const report = (sessionId: string, extra: object = {}) => ({
  sessionId,
  name: 'RangeError',
  message: 'Maximum call stack size exceeded',
  timestampMs: Date.now() - 60_000,
  release: 'shop@2.0.0',
  ...extra,
})
/** A deep recursion: `walk` at its own line on every frame, innermost first, the caller last. */
const recursion = (count: number) =>
  Array.from({ length: count }, (_, i) => (i === count - 1 ? { filename: APP, function: 'main', lineno: 9, colno: 1 } : { filename: APP, function: `walk${i}`, lineno: 1, colno: 1 + i }))

interface StoredFrame {
  filename: string
  function: string
  colno: number | null
  mapped?: { source: string }
}
const storedFrames = async (sessionId: string) =>
  (await rows<{ message: string; frames: StoredFrame[] }>(sql`select message, frames from error_events where session_id = ${sessionId} order by message`)).map((r) => r.frames)

describe('error reports beyond the bounds the service keeps', () => {
  test('thousands of frames: the innermost 100 are kept, mapped through the release\'s source map, and group as their top frame says', async () => {
    // One mapping: line 1, column 0 of the served file is line 2 of src/walk.ts, inside `walk`.
    const map = { version: 3, file: 'app.min.js', sources: ['src/walk.ts'], sourcesContent: ['export function walk(n: number): number {\n  return walk(n + 1)\n}\n'], names: [], mappings: 'AACE' }
    expect((await core.post('/api/ingestion/sourcemaps', { release: 'shop@2.0.0', files: [{ name: 'app.min.js.map', content: map }] })).status).toBe(200)
    const answer = await send({ sessionId: 'lim-deep', errors: [report('lim-deep', { message: 'deep', frames: recursion(5000) }), report('lim-deep', { message: 'shallow', frames: recursion(3) })] })
    expect(answer.accepted).toBe(2)
    // Both stop in the same place; what lies below it does not split them.
    expect(answer.issues[0]).toBe(answer.issues[1])
    const [deep, shallow] = await storedFrames('lim-deep')
    expect(deep).toHaveLength(100)
    expect(deep.map((f) => f.function)).toEqual(recursion(5000).slice(0, 100).map((f) => f.function))
    expect(deep[0].mapped?.source).toBe('src/walk.ts')
    expect(shallow).toHaveLength(3)
    const [issue] = await rows<{ culprit: string }>(sql`select culprit from issues where issue_id = ${answer.issues[0]}`)
    expect(issue.culprit).toBe('walk (src/walk.ts)')
  })

  test('a function or file name of any length is cut to 1024 or 4096 characters; a stack\'s frames are cut alike', async () => {
    const longFunction = `${'Module.'.repeat(1000)}render`
    const longFile = `https://shop.example/${'a/'.repeat(5000)}app.js`
    const answer = await send({
      sessionId: 'lim-long',
      errors: [
        report('lim-long', { message: 'ready', frames: [{ filename: longFile, function: longFunction, lineno: 3, colno: 4 }] }),
        report('lim-long', { message: 'stack', stack: `Error: stack\n    at ${longFunction} (${longFile}:3:4)` }),
      ],
    })
    expect(answer.accepted).toBe(2)
    const [ready, stack] = await storedFrames('lim-long')
    for (const frames of [ready, stack]) {
      expect(frames.map((f) => [f.function.length, f.filename.length])).toEqual([[1024, 4096]])
      expect(frames[0].filename.startsWith('https://shop.example/a/a/')).toBe(true)
    }
  })

  test('a fingerprint of any number or length of entries groups by all of it, never merging what it tells apart', async () => {
    const many = (last: string) => [...Array.from({ length: 40 }, (_, i) => `part-${i}`), last]
    const long = (end: string) => ['checkout', `${'x'.repeat(600)}${end}`]
    const issueOf = async (fingerprint: string[], extra: object = {}) => (await send(report('lim-fp', { fingerprint, ...extra }))).issues[0]
    const manyA = await issueOf(many('a'))
    expect(await issueOf(many('a'), { message: 'other words' })).toBe(manyA)
    expect(await issueOf(many('b'))).not.toBe(manyA)
    const longA = await issueOf(long('a'))
    expect(await issueOf(long('a'), { message: 'other words' })).toBe(longA)
    expect(await issueOf(long('b'))).not.toBe(longA)
    // `{{ default }}` in a long list still stands for the computed grouping: other top frames, other Issues.
    const withDefault = [...many('a'), '{{ default }}']
    const top = (fn: string) => ({ frames: [{ filename: 'https://shop.example/assets/orders.js', function: fn, lineno: 1, colno: 1 }] })
    const payA = await issueOf(withDefault, top('payOrder'))
    expect(await issueOf(withDefault, { ...top('payOrder'), message: 'other words' })).toBe(payA)
    expect(await issueOf(withDefault, top('shipOrder'))).not.toBe(payA)
    expect(new Set([manyA, longA, payA]).size).toBe(3)
    // A list within the bounds groups as it always did.
    expect(await issueOf(['a', 'b'])).not.toBe(await issueOf(['a', 'c']))
  })

  test.each([
    [{ frames: [{ filename: APP, function: 5 }] }, '/errors/0/frames/0/function'],
    [{ frames: [{ filename: 7 }] }, '/errors/0/frames/0/filename'],
    [{ frames: [...recursion(2000), { filename: APP, lineno: 'one' }] }, '/errors/0/frames/2000/lineno'],
    [{ frames: 'walk' }, '/errors/0/frames'],
    [{ fingerprint: [...Array.from({ length: 40 }, () => 'x'), 5] }, '/errors/0/fingerprint/40'],
  ])('a wrong type is still refused, wherever it is: %#', async (extra, path) => {
    const res = await core.post('/api/ingestion/errors', { sessionId: 'lim-bad', errors: [report('lim-bad', extra)] })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' }, path })
  })
})
