import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { parseArgs, startCoreProcess, type CoreProcess } from './core'
import { startPostgres, type PostgresServer } from './lib/postgres'
import { fmt, medianOf, table, type Row } from './lib/report'
import { peakRssMb, removeDir, tempDir } from './lib/system'
import { runWrk, type LoadOptions } from './lib/wrk'

/**
 * `npm run bench -- observability [--runs N] [--seconds S]`: the observability routes of core on a
 * throwaway Postgres, each beside single custom events on the same core as the reference:
 *
 * - O1 error reports with a real V8 stack from a minified bundle, symbolicated through its uploaded
 *   source map (the parsed map cached after the first report), every report a new occurrence;
 * - O2 the same reports without a source map for their release (parse and group only);
 * - O3 log batches of 20 lines;
 * - O4 heartbeats of 512 sessions in turn (each an upsert of the window and its session).
 */

const CHECKOUT = `export function validateCoupon(code: string): boolean {
  if (code.length < 3) throw new TypeError(\`coupon \${code} is too short\`)
  return true
}
export function applyCoupon(total: number, code: string) {
  validateCoupon(code)
  return total * 0.9
}
`
const MAIN = `import { applyCoupon } from './checkout'
export function submitOrder(code: string) {
  return applyCoupon(30, code) + 1
}
`
const SERVED = 'https://shop.example/assets/'

/** A minified bundle, its map, and the real stack Node prints when it throws. */
async function bundle(dir: string): Promise<{ map: string; stack: string; script: string }> {
  mkdirSync(join(dir, 'src'), { recursive: true })
  writeFileSync(join(dir, 'src/checkout.ts'), CHECKOUT)
  writeFileSync(join(dir, 'src/main.ts'), MAIN)
  writeFileSync(join(dir, 'run.mjs'), `const m = await import(process.argv[2]); try { m.submitOrder('x') } catch (e) { console.log(JSON.stringify(e.stack)) }`)
  const result = await Bun.build({ entrypoints: [join(dir, 'src/main.ts')], outdir: join(dir, 'dist'), minify: true, sourcemap: 'external', naming: '[name].[hash].[ext]' })
  const script = result.outputs.find((o) => o.kind === 'entry-point')!.path
  const proc = Bun.spawn(['node', join(dir, 'run.mjs'), script], { stdout: 'pipe' })
  const stack = (JSON.parse(await new Response(proc.stdout).text()) as string).replaceAll(`file://${script}`, SERVED + basename(script))
  return { map: readFileSync(`${script}.map`, 'utf8'), stack, script: basename(script) }
}

const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

export async function main(args: string[]): Promise<void> {
  const { runs, seconds } = parseArgs(args)
  const warmup = Math.min(2, seconds)
  const log = (message: string) => console.error(`[bench] ${message}`)
  const dir = tempDir('sightline-bench-obs-')
  let pg: PostgresServer | undefined
  let core: CoreProcess | undefined
  try {
    log('building a minified bundle; starting Postgres and core')
    const built = await bundle(dir)
    pg = await startPostgres()
    core = await startCoreProcess({ DATABASE_URL: pg.url })
    const upload = await fetch(`${core.url}/api/ingestion/sourcemaps`, {
      method: 'POST',
      headers: auth(core.key),
      body: JSON.stringify({ release: 'bench@1', files: [{ name: `${built.script}.map`, content: built.map }] }),
    })
    if (upload.status !== 200) throw new Error(`source map upload failed: ${upload.status} ${await upload.text()}`)

    const measure = async (name: string, options: LoadOptions) => {
      log(name)
      const target = { ...options, headers: auth(core!.key), connections: 32 }
      await runWrk({ ...target, durationSeconds: warmup })
      return medianOf(runs, async () => {
        const result = await runWrk({ ...target, durationSeconds: seconds })
        if (result.failures > 0) console.error(`  ${name}: ${result.failures} failed requests in this run`)
        return { rps: result.requestsPerSecond, p50: result.p50Ms, p99: result.p99Ms }
      })
    }
    const report = (release: string) =>
      JSON.stringify({ sessionId: 's-__UNIQUE__', endUserId: 'u-1', name: 'TypeError', message: 'coupon x is too short', stack: built.stack, release, url: 'https://shop.example/checkout', timestampMs: Date.now() })
    const logBatch = (i: number) =>
      JSON.stringify({ sessionId: `log-${i}`, endUserId: `u-${i}`, logs: Array.from({ length: 20 }, (_, j) => ({ level: 'info', message: `step ${j} of request ${i}`, url: 'https://shop.example/', timestampMs: Date.now() - j })) })

    const reference = await measure('reference: single customEvent', {
      url: `${core.url}/api/ingestion/customEvent`,
      bodies: Array.from({ length: 64 }, (_, i) => JSON.stringify({ sessionId: `ref-${i}`, eventName: 'checkout', endUserId: `u-${i}` })),
    })
    const mapped = await measure('O1 errors, symbolicated', { url: `${core.url}/api/ingestion/errors`, bodies: [report('bench@1')], unique: '__UNIQUE__' })
    const unmapped = await measure('O2 errors, no source map', { url: `${core.url}/api/ingestion/errors`, bodies: [report('bench@none')], unique: '__UNIQUE__' })
    const logs = await measure('O3 logs, batches of 20', { url: `${core.url}/api/ingestion/logs`, bodies: Array.from({ length: 16 }, (_, i) => logBatch(i)), unique: undefined })
    const beats = await measure('O4 heartbeats', {
      url: `${core.url}/api/ingestion/heartbeat`,
      bodies: Array.from({ length: 512 }, (_, i) => JSON.stringify({ sessionId: `live-${i}`, windowId: 'w-1', url: 'https://shop.example/' })),
    })
    const rss = (await peakRssMb(core.proc.pid)) ?? NaN

    const line = (r: { rps: number; p50: number; p99: number }) => `${fmt(r.rps)} req/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms`
    const rows: Row[] = [
      { name: 'reference: single customEvent', value: line(reference) },
      { name: 'O1 /errors, minified V8 stack, symbolicated', value: line(mapped) },
      { name: 'O2 /errors, same stack, no source map', value: line(unmapped) },
      { name: 'O3 /logs, batches of 20', value: `${line(logs)} (${fmt(logs.rps * 20)} lines/s)` },
      { name: 'O4 /heartbeat, 512 sessions in turn', value: line(beats) },
      { name: 'core peak RSS', value: `${fmt(rss)} MB` },
    ]
    console.log(table(`Observability ingestion (medians of ${runs} runs of ${seconds} s, 32 connections)`, rows))
  } finally {
    await core?.stop()
    await pg?.stop()
    removeDir(dir)
  }
}
