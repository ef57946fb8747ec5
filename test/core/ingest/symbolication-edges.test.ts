import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { StoredFrame } from '@sightline/core/ingest/errors/service'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * Edges of symbolication through the app on a real database: hand-written v3 maps whose every
 * segment is known, so each expectation is the original position the map says.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(async () => {
  await core?.close()
})

const send = async (target: TestCore, stack: string, release: string) => {
  const res = await target.post('/api/ingestion/errors', { sessionId: 'sym-edges', name: 'Error', message: 'boom', stack, release, timestampMs: Date.now() }, { key: core.key })
  expect(res.status).toBe(200)
  const [issueId] = ((await res.json()) as { issues: string[] }).issues
  const [row] = await target.database.db.rows<{ frames: StoredFrame[] }>(sql`select frames from error_events where issue_id = ${issueId} order by received_at desc limit 1`)
  return row.frames
}
const upload = async (target: TestCore, release: string, content: object) => {
  const res = await target.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'app.js.map', content }] }, { key: core.key })
  expect(res.status).toBe(200)
}

/** A source map's base64 VLQ of one number. */
function vlq(n: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  let value = n < 0 ? (-n << 1) | 1 : n << 1
  let out = ''
  do {
    let digit = value & 31
    value >>>= 5
    if (value > 0) digit |= 32
    out += chars[digit]
  } while (value > 0)
  return out
}
/** `mappings` of segments [generated column, source, original line, original column], absolute and 0-based, one array per generated line. */
function mappingsOf(lines: [number, number, number, number][][]): string {
  const last = [0, 0, 0]
  return lines
    .map((segments) => {
      let column = 0
      return segments
        .map(([generated, source, line, col]) => {
          const text = vlq(generated - column) + vlq(source - last[0]) + vlq(line - last[1]) + vlq(col - last[2])
          ;[column, last[0], last[1], last[2]] = [generated, source, line, col]
          return text
        })
        .join(',')
    })
    .join(';')
}

describe('source context', () => {
  test('of a long line is the part around the mapped column, not its start', async () => {
    const release = 'edges@long-line'
    const filler = Array.from({ length: 300 }, (_, i) => `v${i}=${i};`).join('')
    const longLine = `${filler}throw new Error("deep in a long line");${filler}`
    const column = filler.length
    const source = `// vendored, minified\n${longLine}\n// end`
    await upload(core, release, { version: 3, sources: ['../src/vendored.js'], sourcesContent: [source], names: [], mappings: mappingsOf([[[0, 0, 1, column]]]) })
    const [top] = await send(core, 'Error: boom\n    at e (https://shop.example/assets/app.js:1:1)', release)
    expect(top.mapped).toMatchObject({ source: '../src/vendored.js', line: 2, column: column + 1, preContext: ['// vendored, minified'], postContext: ['// end'] })
    expect(top.mapped!.contextLine).toContain('throw new Error("deep in a long line")')
    expect(top.mapped!.contextLine!.length).toBeLessThanOrEqual(302)
    expect(top.mapped!.contextLine).toMatch(/^….*…$/)
  })
})

describe('a frame without a column', () => {
  // Not minified: Bun writes each line's indentation as a segment at column 0 that goes on where
  // the line before ended (the end of `const total = n * 2`).
  const SOURCE = `export function outer(n: number) {
  if (n > 1) {
    const total = n * 2
    return inner(total)
  }
  return 0
}
function inner(x: number) {
  throw new Error('boom ' + x)
}
`
  test('maps to the code its line starts with, not to the end of the line before (a Firefox eval frame, a stack without columns)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sl-symbolicate-edges-'))
    try {
      writeFileSync(join(dir, 'main.ts'), SOURCE)
      const built = await Bun.build({ entrypoints: [join(dir, 'main.ts')], outdir: join(dir, 'dist'), sourcemap: 'external', target: 'browser' })
      expect(built.success).toBe(true)
      const script = readFileSync(join(dir, 'dist/main.js'), 'utf8').split('\n')
      const callLine = script.findIndex((line) => line.includes('return inner(total)')) + 1
      expect(script[callLine - 1]).toStartWith('    return')
      const release = 'edges@no-column'
      await upload(core, release, JSON.parse(readFileSync(join(dir, 'dist/main.js.map'), 'utf8')))
      const lineOf = (text: string) => SOURCE.split('\n').findIndex((line) => line.includes(text)) + 1
      const firefox = `inner@https://shop.example/assets/app.js:${script.findIndex((line) => line.includes('throw new Error')) + 1}:5\nouter@https://shop.example/assets/app.js line ${callLine} > eval:1:1`
      const lineOnly = `inner@https://shop.example/assets/app.js:${script.findIndex((line) => line.includes('throw new Error')) + 1}:5\nouter@https://shop.example/assets/app.js:${callLine}`
      for (const stack of [firefox, lineOnly]) {
        const [top, caller] = await send(core, stack, release)
        expect(top.mapped).toMatchObject({ line: lineOf("throw new Error('boom"), function: 'inner' })
        expect(caller.colno).toBeNull()
        expect(caller.mapped).toMatchObject({ line: lineOf('return inner(total)'), column: 5, function: 'outer', contextLine: '    return inner(total)' })
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('a re-uploaded map', () => {
  test('replaces the parsed copy even when stored at the same instant as the old one (PGlite keeps milliseconds), in another core too', async () => {
    const release = 'edges@same-instant'
    const stack = 'Error: boom\n    at e (https://shop.example/assets/app.js:1:1)'
    const mapOf = (source: string) => ({ version: 3, sources: [source], names: [], mappings: 'AAAA' })
    const other = await startCore({ database: core.database })
    try {
      await upload(core, release, mapOf('../src/first.ts'))
      expect((await send(core, stack, release))[0].mapped?.source).toBe('../src/first.ts')
      expect((await send(other, stack, release))[0].mapped?.source).toBe('../src/first.ts')
      const [{ uploaded }] = await core.database.db.rows<{ uploaded: string }>(sql`select uploaded_at::text as uploaded from sourcemaps where release = ${release}`)
      await upload(other, release, mapOf('../src/second.ts'))
      // What a replacement committed within the same millisecond stores: PGlite's clock has no finer grain.
      await core.database.db.rows(sql`update sourcemaps set uploaded_at = ${uploaded}::timestamptz where release = ${release}`)
      expect((await send(core, stack, release))[0].mapped?.source).toBe('../src/second.ts')
      expect((await send(other, stack, release))[0].mapped?.source).toBe('../src/second.ts')
    } finally {
      await other.close()
    }
  })
})
