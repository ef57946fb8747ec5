import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { sql } from 'drizzle-orm'
import type { StoredFrame } from '@sightline/core/ingest/errors/service'
import { normalizeFunction } from '@sightline/core/ingest/errors/fingerprint'
import { parseStack } from '@sightline/core/ingest/errors/stack'
import { uploadSourcemaps } from '../../../tracker/bin/upload'
import { startCore, type TestCore } from '../../helpers/core'
import { buildApp, positionIn, SCENARIOS, SHELLS, stacksOf, writeApp, type Engine, type Scenario, type Toolchain } from '../helpers/bundles'

/*
 * End to end, as an app's team would: the app built by real bundlers, its maps uploaded by the
 * upload-sourcemaps command to a real core, the stacks that Chrome's, Firefox's and Safari's engines
 * really print sent as error reports, and what was stored read back.
 */

const ENGINES: Engine[] = ['v8', 'spidermonkey', 'javascriptcore', 'bun']
const WITH_SOURCES: Toolchain[] = ['bun', 'esbuild-inline', 'bun-then-terser', 'concatenated']
const ALL: Toolchain[] = [...WITH_SOURCES, 'esbuild-no-sources']
const SERVED = 'https://shop.example/assets/'

interface Build {
  script: string
  stacks: Record<Engine, Record<Scenario, string>>
}

let dir: string
let core: TestCore
let base: string
/** Release 1 by every toolchain, and release 2 (the same code, moved) by two. */
const builds: Record<string, Build> = {}

async function upload(release: string, folder: string) {
  let out = ''
  let err = ''
  const code = await uploadSourcemaps(['--release', release, '--api-key', core.key, '--url', base, folder], {
    fetch: (input, init) => fetch(input, init),
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    env: {},
    sleep: async () => {},
  })
  return { code, out, err }
}

async function build(release: string, toolchain: Toolchain) {
  const out = join(dir, release, toolchain)
  const script = await buildApp(join(dir, 'app'), out, toolchain)
  const stacks = {} as Build['stacks']
  for (const engine of ENGINES) stacks[engine] = await stacksOf(script, engine, SERVED + basename(script))
  builds[`${toolchain}@${release}`] = { script, stacks }
  const uploaded = await upload(`${toolchain}@${release}`, out)
  expect(uploaded).toMatchObject({ code: 0, err: '' })
}

beforeAll(async () => {
  for (const shell of Object.values(SHELLS)) {
    if (!existsSync(shell)) throw new Error(`${shell} is missing: install Debian's libmozjs-102-dev and libjavascriptcoregtk-4.0-bin (.ci/run does)`)
  }
  dir = mkdtempSync(join(tmpdir(), 'sl-bundles-'))
  core = await startCore()
  base = await core.listen()
  // Both releases are built from the same place, as a rebuild is.
  writeApp(join(dir, 'app'))
  for (const toolchain of ALL) await build('1', toolchain)
  writeApp(join(dir, 'app'), { moved: true })
  for (const toolchain of ['bun', 'esbuild-no-sources'] as const) await build('2', toolchain)
  writeApp(join(dir, 'app'))
}, 120_000)
afterAll(async () => {
  await core?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

interface Stored {
  issueId: string
  frames: StoredFrame[]
  title: string
  culprit: string | null
}

async function report(scenario: Scenario, stack: string, release: string | null, extra: object = {}): Promise<Stored> {
  const { name, message } = SCENARIOS[scenario]
  const res = await core.post('/api/ingestion/errors', { sessionId: 'bundles-1', name, message, stack, release, timestampMs: Date.now(), ...extra })
  expect(res.status).toBe(200)
  const [issueId] = ((await res.json()) as { issues: string[] }).issues
  const [occurrence] = await core.database.db.rows<{ frames: StoredFrame[] }>(
    sql`select frames from error_events where issue_id = ${issueId} order by received_at desc limit 1`,
  )
  const [issue] = await core.database.db.rows<{ title: string; culprit: string | null }>(sql`select title, culprit from issues where issue_id = ${issueId}`)
  return { issueId, frames: occurrence.frames, ...issue }
}

/** Where a scenario throws in the app's sources: its line, and the columns an engine may point at (`new` or the error's name). */
const throwSite = (scenario: Scenario) => {
  const { file, throws, name } = SCENARIOS[scenario]
  return { file, ...positionIn(join(dir, 'app'), file, throws, ['new ', `${name}(`]) }
}

const scenarios = Object.keys(SCENARIOS) as Scenario[]

describe('upload-sourcemaps', () => {
  test('stored every build: external maps, a map inlined as a data: URL, an indexed map; debug ids kept', async () => {
    const rows = await core.database.db.rows<{ release: string; name: string; debug_id: string | null }>(
      sql`select release, name, debug_id from sourcemaps order by release, name`,
    )
    expect(rows.map((r) => `${r.release} ${r.name}`)).toEqual([
      `bun-then-terser@1 main.js.map`,
      `bun@1 ${basename(builds['bun@1'].script)}.map`,
      `bun@2 ${basename(builds['bun@2'].script)}.map`,
      `concatenated@1 bundle.js.map`,
      `esbuild-inline@1 main.js.map`,
      `esbuild-no-sources@1 ${basename(builds['esbuild-no-sources@1'].script)}.map`,
      `esbuild-no-sources@2 ${basename(builds['esbuild-no-sources@2'].script)}.map`,
    ])
    expect(rows.find((r) => r.release === 'bun@1')?.debug_id).toMatch(/^[0-9a-f]{32}$/)
  })
})

describe('symbolication of real bundles, from every engine', () => {
  test.each(WITH_SOURCES)('%s: each throw maps to its original file, line, column and function', async (toolchain) => {
    for (const engine of ENGINES) {
      for (const scenario of scenarios) {
        const { frames } = await report(scenario, builds[`${toolchain}@1`].stacks[engine][scenario], `${toolchain}@1`)
        const site = throwSite(scenario)
        const where = `${toolchain} ${engine} ${scenario}`
        expect({ where, source: frames[0].mapped?.source.replace(/^(\.\.\/)+app\//, '') }).toEqual({ where, source: site.file })
        expect({ where, line: frames[0].mapped?.line, function: frames[0].mapped?.function }).toEqual({ where, line: site.line, function: SCENARIOS[scenario].function })
        expect(site.columns).toContain(frames[0].mapped!.column)
        expect(frames[0].mapped?.contextLine?.trim()).toBe(SCENARIOS[scenario].throws)
      }
    }
  })

  test('the callers map too: the named function around a callback, the async caller after an await', async () => {
    const { frames } = await report('showPrices', builds['bun@1'].stacks.spidermonkey.showPrices, 'bun@1')
    expect(frames.map((f) => f.mapped?.function ?? `(${f.filename.replace(/^.*\//, '')})`)).toEqual(['', 'formatPrices', 'showPrices', '(bun-run-spidermonkey.js)'])
    const v8 = await report('openProfile', builds['concatenated@1'].stacks.v8.openProfile, 'concatenated@1')
    expect(v8.frames.filter((f) => f.mapped).map((f) => [f.mapped!.function, f.mapped!.line])).toEqual([
      ['loadProfile', positionIn(join(dir, 'app'), 'src/api/profile.ts', SCENARIOS.openProfile.throws).line],
      ['openProfile', positionIn(join(dir, 'app'), 'src/main.ts', "await loadProfile('')").line],
    ])
  })

  test('one Issue per bug whichever engine and bundler reported it, titled by the error and named by its function', async () => {
    for (const scenario of scenarios) {
      const seen = new Set<string>()
      for (const toolchain of WITH_SOURCES) {
        for (const engine of ENGINES) {
          const stored = await report(scenario, builds[`${toolchain}@1`].stacks[engine][scenario], `${toolchain}@1`)
          seen.add(JSON.stringify([stored.issueId, stored.title, stored.culprit]))
        }
      }
      const { name, message, function: fn, file } = SCENARIOS[scenario]
      expect({ scenario, issues: seen.size }).toEqual({ scenario, issues: 1 })
      expect(JSON.parse([...seen][0]).slice(1)).toEqual([`${name}: ${message}`, fn ? `${fn} (app/${file})` : `app/${file}`])
    }
  })

  test('without sourcesContent: positions map, names come from the map and the frames, never a minifier\'s, and every engine groups alike', async () => {
    for (const scenario of scenarios) {
      const issues = new Set<string>()
      for (const engine of ENGINES) {
        const { frames, issueId } = await report(scenario, builds['esbuild-no-sources@1'].stacks[engine][scenario], 'esbuild-no-sources@1')
        issues.add(issueId)
        const site = throwSite(scenario)
        expect(frames[0].mapped).toMatchObject({ source: `webpack://shop/app/${site.file}`, line: site.line })
        for (const frame of frames.filter((f) => f.mapped?.function)) expect(normalizeFunction(frame.mapped!.function).length).toBeGreaterThan(2)
      }
      expect({ scenario, issues: issues.size }).toEqual({ scenario, issues: 1 })
    }
    // The map's `names` give a caller's view of the function it called.
    const { frames } = await report('showPrices', builds['esbuild-no-sources@1'].stacks.v8.showPrices, 'esbuild-no-sources@1')
    expect(frames.find((f) => f.mapped?.line === 2)?.mapped).toMatchObject({ function: 'formatPrices', functionFrom: 'call site' })
  })

  test('the next release moved the code: the same Issues, titles and culprits, at the new lines', async () => {
    for (const toolchain of ['bun', 'esbuild-no-sources'] as const) {
      for (const engine of ENGINES) {
        for (const scenario of scenarios) {
          const before = await report(scenario, builds[`${toolchain}@1`].stacks[engine][scenario], `${toolchain}@1`)
          const after = await report(scenario, builds[`${toolchain}@2`].stacks[engine][scenario], `${toolchain}@2`)
          const where = `${toolchain} ${engine} ${scenario}`
          expect({ where, issue: after.issueId, title: after.title, culprit: after.culprit }).toEqual({ where, issue: before.issueId, title: before.title, culprit: before.culprit })
          expect(after.frames[0].mapped!.line).toBe(before.frames[0].mapped!.line + 3)
        }
      }
    }
  })

  test('by debug id, without a release: the id the bundler wrote into the script and its map', async () => {
    const { script, stacks } = builds['bun@1']
    const debugId = readFileSync(script, 'utf8').match(/\/\/# debugId=(\w+)/)![1]
    const { frames } = await report('checkout', stacks.v8.checkout, null, { debugIds: { [SERVED + basename(script)]: debugId } })
    expect(frames[0].mapped).toMatchObject({ function: 'total', functionFrom: 'source', sourcemap: `${basename(script)}.map` })
  })

  test('a release without maps keeps the frames as the stack gave them', async () => {
    const stack = builds['bun@1'].stacks.javascriptcore.checkout
    const { frames } = await report('checkout', stack, 'bun@0-unknown')
    expect(frames.map(({ filename, function: fn, lineno, colno }) => ({ filename, function: fn, lineno, colno }))).toEqual(parseStack(stack))
    expect(frames.every((f) => f.mapped === undefined)).toBe(true)
  })
})

describe('upload-sourcemaps against a real core', () => {
  test('the same folder twice replaces, not adds; a map that is not JSON or over the limit fails with the reason, the others are stored', async () => {
    const folder = join(dir, 'mixed')
    rmSync(folder, { recursive: true, force: true })
    await buildApp(join(dir, 'app'), folder, 'bun-then-terser')
    expect((await upload('mixed@1', folder)).code).toBe(0)
    expect((await upload('mixed@1', folder)).code).toBe(0)
    writeFileSync(join(folder, 'broken.js.map'), '<html>404</html>')
    writeFileSync(join(folder, 'huge.js.map'), JSON.stringify({ version: 3, sources: ['a.ts'], sourcesContent: ['x'.repeat(6 * 1024 * 1024)], names: [], mappings: 'AAAA' }))
    const { code, err } = await upload('mixed@1', folder)
    expect(code).toBe(1)
    expect(err).toContain('2 of 3 source maps failed to upload')
    expect(err).toContain('broken.js.map: 400 validation_failed: broken.js.map: not valid JSON')
    expect(err).toMatch(/huge\.js\.map: 413 payload_too_large: .*\(this map is \d+ bytes; the service's operator can raise its MAX_UPLOAD_BODY_BYTES\)/)
    const rows = await core.database.db.rows<{ name: string }>(sql`select name from sourcemaps where release = 'mixed@1'`)
    expect(rows).toEqual([{ name: 'main.js.map' }])
  })
})
