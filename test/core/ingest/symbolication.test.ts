import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { sql } from 'drizzle-orm'
import { MAX_FILENAME_CHARS, MAX_FUNCTION_CHARS, parseStack } from '@sightline/core/ingest/errors/stack'
import type { StoredFrame } from '@sightline/core/ingest/errors/service'
import { createSourceMapCache, loadSourceMap } from '@sightline/core/ingest/sourcemaps/cache'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * A bundle built and minified here with its source map, run under Node (V8) and Bun
 * (JavaScriptCore), its real stacks sent as error reports: symbolication must lead back to the
 * original file, line and function, and group every engine and release into one Issue.
 */

const CHECKOUT_V1 = `export class Cart {
  items: number[] = []
  total(): number {
    return this.items.reduce((a, b) => a + b, 0)
  }
}

export function validateCoupon(code: string): boolean {
  if (code.length < 3) {
    throw new TypeError(\`coupon \${code} is too short\`)
  }
  return true
}

export function applyCoupon(cart: Cart, code: string) {
  validateCoupon(code)
  return cart.total() * 0.9
}
`
// Release 1.1.0: the same bug, moved down by new code above it.
const CHECKOUT_V2 = `/** Discounts. */
export const MAX_DISCOUNT = 0.5

export function discountOf(code: string): number {
  return code.startsWith('VIP') ? MAX_DISCOUNT : 0.1
}

${CHECKOUT_V1.replace('* 0.9', '* (1 - discountOf(code))')}`
const MAIN = `import { Cart, applyCoupon } from './checkout'
export function submitOrder(code: string) {
  const cart = new Cart()
  cart.items.push(10, 20)
  return applyCoupon(cart, code)
}
`
const RUN = `const { submitOrder } = await import(process.argv[2])
try { submitOrder('x') } catch (e) { console.log(JSON.stringify(e.stack)) }
`
const SERVED = 'https://shop.example/assets/'
const lineOf = (source: string, text: string) => source.split('\n').findIndex((line) => line.includes(text)) + 1

interface Build {
  script: string
  map: string
  /** Real stacks of `submitOrder('x')`, as if the script had been served from https://shop.example/assets/. */
  v8: string
  jsc: string
}

let dir: string
let v1: Build
let v2: Build
let core: TestCore

async function build(name: string, checkout: string): Promise<Build> {
  const root = join(dir, name)
  mkdirSync(join(root, 'src'), { recursive: true })
  writeFileSync(join(root, 'src/checkout.ts'), checkout)
  writeFileSync(join(root, 'src/main.ts'), MAIN)
  const result = await Bun.build({
    entrypoints: [join(root, 'src/main.ts')],
    outdir: join(root, 'dist'),
    minify: true,
    sourcemap: 'external',
    naming: '[name].[hash].[ext]',
    target: 'browser',
  })
  expect(result.success).toBe(true)
  const script = result.outputs.find((o) => o.kind === 'entry-point')!.path
  const stackFrom = async (command: string[]) => {
    const proc = Bun.spawn([...command, join(dir, 'run.mjs'), script], { stdout: 'pipe', stderr: 'pipe' })
    const out = await new Response(proc.stdout).text()
    expect(await proc.exited).toBe(0)
    return (JSON.parse(out) as string).replaceAll(`file://${script}`, SERVED + basename(script)).replaceAll(script, SERVED + basename(script))
  }
  return { script, map: `${script}.map`, v8: await stackFrom(['node']), jsc: await stackFrom([process.execPath]) }
}

/** Firefox writes the same frames as `name@url:line:column`. */
const asFirefox = (v8: string) =>
  parseStack(v8)
    .map((f) => `${f.function.replace(/^.*\./, '')}@${f.filename}:${f.lineno}:${f.colno}`)
    .join('\n')

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sl-symbolicate-'))
  writeFileSync(join(dir, 'run.mjs'), RUN)
  ;[v1, v2] = await Promise.all([build('v1', CHECKOUT_V1), build('v2', CHECKOUT_V2)])
  core = await startCore()

  const form = new FormData()
  form.append('release', 'shop@1.0.0')
  form.append('file', new File([readFileSync(v1.map)], basename(v1.map)))
  form.append('file', new File([readFileSync(v1.script)], basename(v1.script)))
  const multipart = await core.request('/api/ingestion/sourcemaps', { method: 'POST', body: form, headers: { authorization: `Bearer ${core.key}` } })
  expect(multipart.status).toBe(200)
  const json = await core.post('/api/ingestion/sourcemaps', {
    release: 'shop@1.1.0',
    files: [{ name: `assets/${basename(v2.map)}`, url: `~/assets/${basename(v2.script)}`, content: JSON.parse(readFileSync(v2.map, 'utf8')) }],
  })
  expect(json.status).toBe(200)
}, 60_000)
afterAll(async () => {
  await core?.close()
  rmSync(dir, { recursive: true, force: true })
})

const send = async (stack: string, release: string | null, extra: object = {}) => {
  const res = await core.post('/api/ingestion/errors', {
    sessionId: 'sym-1',
    endUserId: 'user-sym',
    name: 'TypeError',
    message: 'coupon x is too short',
    stack,
    release,
    url: 'https://shop.example/checkout',
    timestampMs: Date.now(),
    ...extra,
  })
  expect(res.status).toBe(200)
  const [issueId] = ((await res.json()) as { issues: string[] }).issues
  const [occurrence] = await core.database.db.rows<{ frames: StoredFrame[] }>(
    sql`select frames from error_events where issue_id = ${issueId} order by received_at desc limit 1`,
  )
  return { issueId, frames: occurrence.frames }
}

describe('symbolication of a minified bundle', () => {
  test('a V8 stack maps back to the original file, line, function, with source context; the reported position is kept', async () => {
    const { issueId, frames } = await send(v1.v8, 'shop@1.0.0')
    const [top, caller, outer] = frames
    expect(top.lineno).toBe(1)
    expect(top.function).toMatch(/^[\w$]{1,2}$/)
    expect(top.mapped).toMatchObject({
      source: '../src/checkout.ts',
      line: lineOf(CHECKOUT_V1, 'throw new TypeError'),
      function: 'validateCoupon',
      sourcemap: basename(v1.map),
      contextLine: '    throw new TypeError(`coupon ${code} is too short`)',
      preContext: ['  }', '}', '', 'export function validateCoupon(code: string): boolean {', '  if (code.length < 3) {'],
      postContext: ['  }', '  return true', '}', '', 'export function applyCoupon(cart: Cart, code: string) {'],
    })
    expect(caller.mapped).toMatchObject({ source: '../src/checkout.ts', line: lineOf(CHECKOUT_V1, '  validateCoupon(code)'), function: 'applyCoupon' })
    expect(outer.mapped).toMatchObject({ source: '../src/main.ts', line: lineOf(MAIN, 'return applyCoupon'), function: 'submitOrder' })
    const [row] = await core.database.db.rows<{ culprit: string }>(sql`select culprit from issues where issue_id = ${issueId}`)
    expect(row.culprit).toBe('validateCoupon (src/checkout.ts)')
  })

  test('JavaScriptCore (with its tail calls), Firefox, and the next release all land in the same Issue', async () => {
    const { issueId } = await send(v1.v8, 'shop@1.0.0')
    // JavaScriptCore drops `submitOrder`, which returns applyCoupon(...) as a tail call.
    expect(parseStack(v1.jsc).length).toBeLessThan(parseStack(v1.v8).length)
    const jsc = await send(v1.jsc, 'shop@1.0.0')
    expect(jsc.frames[0].mapped).toMatchObject({ function: 'validateCoupon', line: lineOf(CHECKOUT_V1, 'throw new TypeError') })
    expect(jsc.issueId).toBe(issueId)
    expect((await send(asFirefox(v1.v8), 'shop@1.0.0')).issueId).toBe(issueId)

    const next = await send(v2.v8, 'shop@1.1.0')
    expect(next.frames[0].mapped).toMatchObject({ source: '../src/checkout.ts', line: lineOf(CHECKOUT_V2, 'throw new TypeError'), function: 'validateCoupon' })
    expect(lineOf(CHECKOUT_V2, 'throw new TypeError')).not.toBe(lineOf(CHECKOUT_V1, 'throw new TypeError'))
    expect(next.issueId).toBe(issueId)
    const [row] = await core.database.db.rows<{ first_release: string; last_release: string }>(sql`select first_release, last_release from issues where issue_id = ${issueId}`)
    expect(row).toEqual({ first_release: 'shop@1.0.0', last_release: 'shop@1.1.0' })
  })

  test('without a map for the release the frames stay as reported (and group apart)', async () => {
    const mapped = await send(v1.v8, 'shop@1.0.0')
    const unmapped = await send(v1.v8, 'shop@0.9.0')
    expect(unmapped.frames.every((f) => f.mapped === undefined)).toBe(true)
    expect(unmapped.issueId).not.toBe(mapped.issueId)
  })

  test('maps match by URL, by file name from another host, or by debug id without a release', async () => {
    const elsewhere = v1.v8.replaceAll(SERVED, 'https://cdn.other.example/static/js/')
    expect((await send(elsewhere, 'shop@1.0.0')).frames[0].mapped?.function).toBe('validateCoupon')
    // Release 1.1.0's map was uploaded with the served path `~/assets/...`.
    expect((await send(v2.v8.replaceAll('https://shop.example/', 'https://shop.example:8443/'), 'shop@1.1.0')).frames[0].mapped?.function).toBe('validateCoupon')

    const debugId = readFileSync(v1.script, 'utf8').match(/\/\/# debugId=(\w+)/)?.[1]
    expect(debugId).toBeDefined()
    const url = SERVED + basename(v1.script)
    const byId = await send(v1.v8, null, { debugIds: { [url]: debugId } })
    expect(byId.frames[0].mapped).toMatchObject({ function: 'validateCoupon', sourcemap: basename(v1.map) })
    // Entries beside it that are no debug ids are ignored, not a reason to refuse the report.
    const amongOthers = await send(v1.v8, null, { debugIds: { 'https://shop.example/assets/a.js': null, 'https://shop.example/assets/b.js': 'f'.repeat(80), [url]: debugId } })
    expect(amongOthers.frames[0].mapped).toMatchObject({ function: 'validateCoupon', sourcemap: basename(v1.map) })
    expect((await send(v1.v8, null)).frames[0].mapped).toBeUndefined()
  })

  test('a re-uploaded map replaces the old one at once, parsed copies included', async () => {
    expect((await send(v1.v8, 'shop@1.0.0')).frames[0].mapped?.source).toBe('../src/checkout.ts')
    const map = JSON.parse(readFileSync(v1.map, 'utf8'))
    map.sources = ['../src/renamed-checkout.ts', '../src/main.ts']
    const res = await core.post('/api/ingestion/sourcemaps', { release: 'shop@1.0.0', files: [{ name: basename(v1.map), content: map }] })
    expect(res.status).toBe(200)
    expect((await send(v1.v8, 'shop@1.0.0')).frames[0].mapped?.source).toBe('../src/renamed-checkout.ts')
  })

  test('a map whose mappings point past its `sources` (a broken build) leaves the frames as reported; the report is stored', async () => {
    // "ACAA": generated column 0 maps to source index 1 of a map that lists one source.
    const broken = { version: 3, sources: ['../src/checkout.ts'], names: [], mappings: 'ACAA' }
    const upload = await core.post('/api/ingestion/sourcemaps', { release: 'shop@broken', files: [{ name: 'app.js.map', content: broken }] })
    expect(upload.status).toBe(200)
    const { frames } = await send('TypeError: coupon x is too short\n    at e (https://shop.example/assets/app.js:1:1)', 'shop@broken')
    expect(frames).toEqual([expect.objectContaining({ filename: 'https://shop.example/assets/app.js', function: 'e', lineno: 1, colno: 1 })])
    expect(frames[0].mapped).toBeUndefined()
  })

  test('a map whose sourcesContent or names hold what is not text maps positions only; the report is stored', async () => {
    // Anyone with the page's key may upload: such a map must not cost the release its error reports.
    const stack = 'TypeError: coupon x is too short\n    at validate (https://shop.example/assets/app.js:1:1)\n    at submit (https://shop.example/assets/app.js:1:2)'
    const plain = { version: 3, sources: ['../src/checkout.ts'], names: [5, { a: 1 }], mappings: 'AAAAA,CAACC' }
    const hostile: Record<string, object> = {
      'content-number': { ...plain, sourcesContent: [123] },
      'content-object': { ...plain, sourcesContent: [{ a: 1 }] },
      'content-array': { ...plain, sourcesContent: [['function f() {}']] },
      'in-a-section': { version: 3, sections: [{ offset: { line: 0, column: 0 }, map: { ...plain, sourcesContent: [2] } }] },
    }
    for (const [release, content] of Object.entries(hostile)) {
      const upload = await core.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'app.js.map', content }] })
      expect(upload.status).toBe(200)
      const { frames } = await send(stack, release)
      expect(frames.map((f) => f.mapped && { source: f.mapped.source, line: f.mapped.line, column: f.mapped.column, function: f.mapped.function })).toEqual([
        { source: '../src/checkout.ts', line: 1, column: 1, function: 'validate' },
        { source: '../src/checkout.ts', line: 1, column: 2, function: 'submit' },
      ])
      expect(frames.every((f) => f.mapped?.contextLine === undefined)).toBe(true)
    }
  })

  test('frames in the sources a map marks as third-party (`ignoreList`, `x_google_ignoreList`) are not in-app: they neither group nor name the Issue', async () => {
    // Generated column 0 of line 1 is in the framework (source 1), column 10 in the app (source 0).
    const sources = ['../src/checkout.ts', '../vendor/framework.js']
    const mappings = 'ACAA,UDAA'
    const stack = (caller: string) => `TypeError: coupon x is too short\n    at dispatch (https://shop.example/assets/fw.js:1:1)\n    at ${caller} (https://shop.example/assets/fw.js:1:11)`
    const maps: Record<string, object> = {
      'shop@ignore-google': { version: 3, sources, names: [], mappings, x_google_ignoreList: [1] },
      'shop@ignore-spec': { version: 3, sources, names: [], mappings, ignoreList: [1] },
      'shop@ignore-section': { version: 3, sections: [{ offset: { line: 0, column: 0 }, map: { version: 3, sources, names: [], mappings, x_google_ignoreList: [1] } }] },
    }
    for (const [release, content] of Object.entries(maps)) {
      expect((await core.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'fw.js.map', content }] })).status).toBe(200)
      const { issueId, frames } = await send(stack('applyCoupon'), release)
      expect(frames.map((f) => [f.mapped?.source, f.inApp])).toEqual([
        ['../vendor/framework.js', false],
        ['../src/checkout.ts', true],
      ])
      const [issue] = await core.database.db.rows<{ culprit: string }>(sql`select culprit from issues where issue_id = ${issueId}`)
      expect(issue.culprit).toBe('applyCoupon (src/checkout.ts)')
    }
    // An ignore list that is not a list of indexes marks nothing, and costs no report.
    for (const [i, ignore] of [5, 'abc1', { 0: 1 }, [null, '1']].entries()) {
      const release = `shop@ignore-odd-${i}`
      expect((await core.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'fw.js.map', content: { version: 3, sources, names: [], mappings, x_google_ignoreList: ignore } }] })).status).toBe(200)
      expect((await send(stack('applyCoupon'), release)).frames.map((f) => f.inApp)).toEqual([true, true])
    }
  })

  test('the file and function a map gives a frame are cut as a reported one is: a small report cannot store megabytes', async () => {
    const longName = 'f'.repeat(100_000)
    const map = { version: 3, sources: [`../src/${'x'.repeat(1_000_000)}.ts`], names: [longName], mappings: 'AAAAA,CAAAA' }
    expect((await core.post('/api/ingestion/sourcemaps', { release: 'shop@long', files: [{ name: 'app.js.map', content: map }] })).status).toBe(200)
    const frame = '\n    at e (https://shop.example/assets/app.js:1:1)'
    const { frames } = await send(`TypeError: coupon x is too short${frame.repeat(50)}`, 'shop@long')
    expect(frames).toHaveLength(50)
    for (const { mapped } of frames) {
      expect(mapped?.source).toBe(`../src/${'x'.repeat(MAX_FILENAME_CHARS - 7)}`)
      expect(mapped?.function.length).toBeLessThanOrEqual(MAX_FUNCTION_CHARS)
    }
  })

  test('a hundred frames deep in a large original source are each named without a scan of the source per frame', async () => {
    // 50,000 small functions (2.3 MB of source), and a map that sends column 10j of line 1 to the last ones.
    const count = 50_000
    const source = Array.from({ length: count }, (_, k) => `function handler${k}(event) {\n  return process(event, ${k})\n}\n`).join('')
    const called = Array.from({ length: 100 }, (_, j) => count - 1 - j * 7)
    let line = 0
    const mappings = called
      .map((k, j) => {
        const segment = vlq(j === 0 ? 0 : 10) + vlq(0) + vlq(3 * k + 1 - line) + vlq(j === 0 ? 2 : 0)
        line = 3 * k + 1
        return segment
      })
      .join(',')
    const map = { version: 3, sources: ['../src/handlers.ts'], sourcesContent: [source], names: [], mappings }
    expect((await core.post('/api/ingestion/sourcemaps', { release: 'shop@big', files: [{ name: 'big.js.map', content: map }] })).status).toBe(200)
    const stack = ['Error: boom', ...called.map((_, j) => `    at e (https://shop.example/assets/big.js:1:${10 * j + 1})`)].join('\n')
    const started = performance.now()
    const { frames } = await send(stack, 'shop@big')
    const elapsedMs = performance.now() - started
    expect(frames.map((f) => f.mapped?.function)).toEqual(called.map((k) => `handler${k}`))
    // Scanning up to each frame took about a tenth of a second per frame here; one pass takes about that in all.
    expect(elapsedMs).toBeLessThan(3000)
  })

  test('frames deep in blocks nested a hundred thousand times are named without a walk through every block per frame', async () => {
    // An original source the page's key uploaded: `outer` holds 150,000 nested blocks that declare
    // no function, another 150,000 already closed before `return 1`, and 150,000 more never closed.
    // Each frame's name was found by walking out through all of them: these 20 reports took 10 s.
    const depth = 150_000
    const nest = 'if (x) {'.repeat(depth)
    const source = `function outer() {\n${nest}\n${'}'.repeat(depth)}\nreturn 1\n${nest}\n`
    // Generated columns 0, 10, 20 of line 1 go to the innermost block of the first nest, the line
    // after the closed one, and the innermost block of the last nest.
    const mappings = [vlq(0) + vlq(0) + vlq(1) + vlq(nest.length), vlq(10) + vlq(0) + vlq(2) + vlq(-nest.length), vlq(10) + vlq(0) + vlq(1) + vlq(nest.length)].join(',')
    const map = { version: 3, sources: ['../src/nested.ts'], sourcesContent: [source], names: [], mappings }
    expect((await core.post('/api/ingestion/sourcemaps', { release: 'shop@nested', files: [{ name: 'nested.js.map', content: map }] })).status).toBe(200)
    const frames = Array.from({ length: 99 }, (_, j) => ({ filename: 'https://shop.example/assets/nested.js', function: 'e', lineno: 1, colno: 1 + 10 * (j % 3) }))
    const report = (k: number) => ({ name: 'Error', message: `nested ${k}`, timestampMs: Date.now(), release: 'shop@nested', frames })
    const started = performance.now()
    const res = await core.post('/api/ingestion/errors', { sessionId: 'sym-nested', errors: Array.from({ length: 20 }, (_, k) => report(k)) })
    const elapsedMs = performance.now() - started
    expect(res.status).toBe(200)
    const [stored] = await core.database.db.rows<{ frames: StoredFrame[] }>(sql`select frames from error_events where session_id = 'sym-nested' limit 1`)
    expect(stored.frames.map((f) => [f.mapped?.line, f.mapped?.function])).toEqual(frames.map((_, j) => [[2, 4, 5][j % 3], 'outer']))
    // Half a second here once each frame's way out is known, found once; a walk per frame took seconds a report.
    expect(elapsedMs).toBeLessThan(3000)
  })
})

/** A source map VLQ number. */
function vlq(value: number): string {
  const digits = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  let rest = value < 0 ? (-value << 1) | 1 : value << 1
  let out = ''
  do {
    const digit = rest & 31
    rest >>>= 5
    out += digits[rest > 0 ? digit | 32 : digit]
  } while (rest > 0)
  return out
}

describe('source map cache', () => {
  const tinyMap = JSON.stringify({ version: 3, sources: ['a.ts'], names: [], mappings: 'AAAA' })

  test('a map is fetched and parsed once, however many ask at the same moment', async () => {
    const cache = createSourceMapCache()
    let fetches = 0
    const fetch = async () => {
      fetches++
      await Bun.sleep(10)
      return tinyMap
    }
    const loaded = await Promise.all(Array.from({ length: 10 }, () => cache.get('k', 'a.js.map', fetch)))
    expect(fetches).toBe(1)
    expect(new Set(loaded).size).toBe(1)
    await cache.get('k', 'a.js.map', fetch)
    expect(fetches).toBe(1)
  })

  test('bounded: the least recently used maps leave first; a map larger than the bound is not kept', async () => {
    const tiny = loadSourceMap('tiny', tinyMap).bytes
    const cache = createSourceMapCache({ maxBytes: tiny * 2 })
    const fetched: string[] = []
    const get = (key: string, json = tinyMap) => cache.get(key, key, async () => (fetched.push(key), json))
    await get('a')
    await get('b')
    await get('a')
    await get('c')
    expect(cache.stats()).toEqual({ entries: 2, bytes: tiny * 2 })
    await get('a')
    await get('b')
    expect(fetched).toEqual(['a', 'b', 'c', 'b'])
    const huge = JSON.stringify({ version: 3, sources: ['a.ts'], names: [], mappings: 'AAAA', x: 'y'.repeat(1000) })
    expect(await get('huge', huge)).not.toBeNull()
    expect(cache.stats().bytes).toBeLessThanOrEqual(tiny * 2)
    expect(await cache.get('gone', 'gone', async () => null)).toBeNull()
  })

  test('what is not text in sourcesContent is not counted: an object with a `length` of its own leaves the count a number', async () => {
    const cache = createSourceMapCache()
    const odd = JSON.stringify({ version: 3, sources: ['a.ts', 'b.ts'], sourcesContent: [{ length: 'x' }, { length: 1e300 }], names: [], mappings: 'AAAA' })
    expect((await cache.get('odd', 'odd.js.map', async () => odd))?.sourceText('a.ts')).toBeNull()
    await cache.get('tiny', 'tiny.js.map', async () => tinyMap)
    expect(cache.stats()).toEqual({ entries: 2, bytes: loadSourceMap('odd', odd).bytes + loadSourceMap('tiny', tinyMap).bytes })
    expect(typeof cache.stats().bytes).toBe('number')
  })

  test('maps are counted at what they take decoded, not at their JSON: many segments weigh far more than their text', async () => {
    // 20,000 segments of 4 characters, and a source of 50,000 characters split into lines for context.
    const dense = JSON.stringify({ version: 3, sources: ['a.ts'], sourcesContent: ['x\n'.repeat(25_000)], names: [], mappings: Array(200).fill(Array(100).fill('CAAC').join(',')).join(';') })
    const loaded = loadSourceMap('dense.js.map', dense)
    expect(loaded.bytes).toBeGreaterThan(dense.length + 20_000 * 50)
    // A bound of five times its JSON would have kept it, counted by its JSON; it takes more.
    const cache = createSourceMapCache({ maxBytes: dense.length * 5 })
    expect(loaded.bytes).toBeGreaterThan(dense.length * 5)
    expect(await cache.get('dense', 'dense.js.map', async () => dense)).not.toBeNull()
    expect(cache.stats()).toEqual({ entries: 0, bytes: 0 })
    // The estimate holds against the heap: forty such maps, kept, take about what it says.
    Bun.gc(true)
    const before = process.memoryUsage().heapUsed
    const kept = Array.from({ length: 40 }, (_, i) => loadSourceMap(`d${i}`, dense.replace('"version"', `"n":${i},"version"`)))
    Bun.gc(true)
    const perMap = (process.memoryUsage().heapUsed - before) / kept.length
    expect(perMap).toBeGreaterThan(loaded.bytes * 0.5)
    expect(perMap).toBeLessThan(loaded.bytes * 2)
  })
})
