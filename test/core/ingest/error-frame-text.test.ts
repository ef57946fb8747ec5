import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * A frame keeps at most 4096 characters of its file and 1024 of its function, and a mapped frame
 * 300 of each source line around it. Cut there, a character of two UTF-16 units (an emoji) across
 * the bound lost its second half and was stored as U+FFFD: it is left out whole instead, as every
 * other cut text is (truncateUtf8).
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const EMOJI = '😀'
const framesOf = async (sessionId: string) =>
  (await core.database.db.rows<{ frames: Record<string, any>[] }>(sql`select frames from error_events where session_id = ${sessionId}`))[0].frames
const send = async (report: object) => {
  const res = await core.post('/api/ingestion/errors', { name: 'Error', message: 'cut', timestampMs: Date.now() - 1000, ...report })
  expect(res.status).toBe(200)
}

describe('frame texts are cut between characters', () => {
  test('ready frames: file and function', async () => {
    const filename = `https://shop.example/${'f'.repeat(4096 - 22)}${EMOJI}.js`
    const fn = `${'g'.repeat(1023)}${EMOJI}tail`
    await send({ sessionId: 'cut-ready', frames: [{ filename, function: fn, lineno: 1, colno: 1 }] })
    const [frame] = await framesOf('cut-ready')
    expect(frame.filename).toBe(filename.slice(0, 4095))
    expect(frame.function).toBe('g'.repeat(1023))
  })

  test('frames parsed from the stack: file and function', async () => {
    const file = `https://shop.example/${'h'.repeat(4096 - 22)}${EMOJI}.js`
    await send({ sessionId: 'cut-stack', stack: `Error: cut\n    at ${'k'.repeat(1023)}${EMOJI} (${file}:1:1)` })
    const [frame] = await framesOf('cut-stack')
    expect(frame.filename).toBe(file.slice(0, 4095))
    expect(frame.function).toBe('k'.repeat(1023))
  })

  test('mapped frames: the original source name and the context lines', async () => {
    const source = `src/${'s'.repeat(4096 - 5)}${EMOJI}.ts`
    const line = `${'x'.repeat(299)}${EMOJI}${'y'.repeat(100)}`
    const map = { version: 3, sources: [source], names: [], mappings: 'AAAA', sourcesContent: [`${line}\n`] }
    const upload = await core.post('/api/ingestion/sourcemaps', { release: 'cut@1', files: [{ name: 'app.js.map', content: map }] })
    expect(upload.status).toBe(200)
    await send({ sessionId: 'cut-mapped', release: 'cut@1', frames: [{ filename: 'https://shop.example/app.js', function: 'a', lineno: 1, colno: 1 }] })
    const [frame] = await framesOf('cut-mapped')
    expect(frame.mapped.source).toBe(source.slice(0, 4095))
    expect(frame.mapped.contextLine).toBe(`${'x'.repeat(299)}…`)
    expect(JSON.stringify(frame)).not.toContain('\ufffd')
  })
})
