import { join } from 'node:path'
import type { Subprocess } from 'bun'
import postgres from 'postgres'
import { startPostgres, type PostgresServer } from './lib/postgres'
import { fmt, medianOf, table, type Row } from './lib/report'
import { readRecording, replayChunkBodies } from './lib/replay'
import { freePort, peakRssMb, removeDir, resetPeakRss, tempDir, waitForHttp } from './lib/system'
import { describeShares, sampleWaits } from './lib/waits'
import { runWrk, type LoadOptions, type LoadResult } from './lib/wrk'

/**
 * `npm run bench [-- core] [--runs N] [--seconds S] [--only P2,...]`: core's ingestion against its baselines, all
 * in one run on this machine.
 *
 * - P1 single custom events, durable, against a raw `Bun.serve` that parses the same JSON and stores nothing;
 * - P2 batches of 20 custom events, against `COPY` of the same rows into the same table;
 * - P3 rrweb replay chunks of up to 1 MB, from real recordings of the tracker on the bench shop
 *   (`fixtures/shop-replay.json.zst`, made by `npm run bench -- replay-recording`), each request a
 *   session of its own (the server would dedupe repeats);
 * - P5 P1 again on the embedded database;
 * - core's peak resident memory under that load, per phase (the peak is reset between them).
 */
const ROOT = join(import.meta.dir, '..', '..')

const PHASES = ['P1', 'P2', 'P3', 'P5'] as const
type Phase = (typeof PHASES)[number]

interface Options {
  runs: number
  seconds: number
  /** `--only P2,P5`: just these phases (the RSS row of P1–P3 needs them all); undefined: every one. */
  only?: Phase[]
}

export function parseArgs(args: string[]): Options {
  const value = (name: string, fallback: number) => {
    const i = args.indexOf(`--${name}`)
    const n = i === -1 ? fallback : Number(args[i + 1])
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} takes a positive number`)
    return n
  }
  const i = args.indexOf('--only')
  const only = i === -1 ? undefined : (args[i + 1] ?? '').toUpperCase().split(',')
  if (only && !only.every((p): p is Phase => (PHASES as readonly string[]).includes(p))) throw new Error(`--only takes phases among ${PHASES.join(',')}`)
  return { runs: value('runs', 3), seconds: value('seconds', 5), only }
}

export interface CoreProcess {
  url: string
  key: string
  proc: Subprocess
  stop(): Promise<void>
}

/** Core as an operator runs it: its own process, on a fresh database, logging warnings only. */
export async function startCoreProcess(env: Record<string, string>): Promise<CoreProcess> {
  const port = await freePort()
  const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  let output = ''
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true })
  })()
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}/health/simple`, 60_000)
  // The first start on an empty database prints the default project's development key once.
  const deadline = Date.now() + 10_000
  let key: string | undefined
  while (!(key = output.match(/development key, shown this once:\s+(\S+)/)?.[1])) {
    if (Date.now() > deadline) throw new Error(`core printed no key:\n${output}`)
    await Bun.sleep(20)
  }
  return {
    url,
    key,
    proc,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** The baseline: parses the same JSON as core and answers the same, storing nothing. */
function startRawServer() {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      await request.json()
      return Response.json({ success: true })
    },
  })
}

const customEvent = (i: number) => JSON.stringify({ sessionId: `bench-${i % 64}`, eventName: 'checkout', eventProperties: { total: 42.5, currency: 'EUR', items: 3 }, endUserId: `user-${i % 64}` })
const customEventBatch = (i: number) =>
  JSON.stringify({
    sessionId: `bench-${i % 64}`,
    endUserId: `user-${i % 64}`,
    events: Array.from({ length: 20 }, (_, j) => ({ eventName: `step-${j}`, eventProperties: { page: `/p/${j}`, n: i * 20 + j }, timestamp: Date.now() - j })),
  })

async function load(options: LoadOptions & { seconds: number }): Promise<LoadResult> {
  const result = await runWrk({ ...options, durationSeconds: options.seconds })
  if (result.failures > 0) console.error(`  ${options.url}: ${result.failures} failed requests in this run`)
  return result
}

const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

/** Rows per second that `COPY` puts into the events table, committed: the floor under any insert path. */
async function copyRowsPerSecond(url: string, projectId: string, rows: number): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const lines: string[] = []
    const now = Date.now()
    for (let i = 0; i < rows; i++) {
      const properties = JSON.stringify({ page: `/p/${i % 20}`, n: i })
      lines.push(
        [projectId, Bun.randomUUIDv7(), 'development', `bench-${i % 64}`, `user-${i % 64}`, `step-${i % 20}`, properties, new Date(now - i).toISOString()].join('\t'),
      )
    }
    const payload = lines.join('\n') + '\n'
    const started = performance.now()
    await sql.begin(async (tx) => {
      const writable = await tx`copy events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp) from stdin`.writable()
      await new Promise<void>((resolve, reject) => {
        writable.on('error', reject)
        writable.on('finish', resolve)
        writable.end(payload)
      })
    })
    return rows / ((performance.now() - started) / 1000)
  } finally {
    await sql.end()
  }
}

async function projectIdOf(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    return (await sql`select project_id::text as id from projects limit 1`)[0].id
  } finally {
    await sql.end()
  }
}

async function replayStorage(url: string): Promise<{ raw: number; stored: number }> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql`select coalesce(sum(raw_bytes), 0)::float8 as raw, coalesce(sum(length(data)), 0)::float8 as stored from replay_chunks`
    return { raw: row.raw, stored: row.stored }
  } finally {
    await sql.end()
  }
}

interface Context {
  runs: number
  seconds: number
  warmup: number
  rawUrl: string
  log(message: string): void
}

/** Where the server's backends spend P1's or P2's load, in one more run of it (the sampling adds its own queries). */
async function waitsRow(phase: string, url: string, options: LoadOptions & { seconds: number }): Promise<Row> {
  const shares = await sampleWaits(url, load(options))
  return { name: `${phase}: where Postgres's backends spend a transaction (sampled in one more run)`, value: describeShares(shares) }
}

async function singles(ctx: Context, core: CoreProcess, pg: PostgresServer): Promise<Row[]> {
  const { runs, seconds, warmup, rawUrl } = ctx
  ctx.log('P1 single customEvent vs raw Bun.serve')
  const bodies = Array.from({ length: 64 }, (_, i) => customEvent(i))
  const p1 = { url: `${core.url}/api/ingestion/customEvent`, headers: auth(core.key), bodies, connections: 32, seconds }
  await load({ ...p1, seconds: warmup })
  await load({ ...p1, url: rawUrl, seconds: warmup })
  const single = await medianOf(runs, async () => {
    const durable = await load(p1)
    const baseline = await load({ ...p1, url: rawUrl })
    return { rps: durable.requestsPerSecond, p50: durable.p50Ms, p99: durable.p99Ms, raw: baseline.requestsPerSecond }
  })
  // Group commit trades latency for throughput: with more requests waiting, each commit carries more.
  const wide = await medianOf(runs, async () => {
    const durable = await load({ ...p1, connections: 256 })
    const baseline = await load({ ...p1, url: rawUrl, connections: 256 })
    return { rps: durable.requestsPerSecond, p99: durable.p99Ms, raw: baseline.requestsPerSecond }
  })
  return [
    { name: 'P1 customEvent, durable (Postgres), 32 connections', value: `${fmt(single.rps)} req/s, p50 ${fmt(single.p50, 2)} ms, p99 ${fmt(single.p99, 2)} ms`, target: 'p99 ≤ 10 ms', met: single.p99 <= 10 },
    { name: 'P1 raw Bun.serve, parse only', value: `${fmt(single.raw)} req/s` },
    { name: 'P1 ratio to raw', value: fmt(single.rps / single.raw, 2), target: '≥ 0.50', met: single.rps / single.raw >= 0.5 },
    { name: 'P1 at 256 connections', value: `${fmt(wide.rps)} req/s, p99 ${fmt(wide.p99, 2)} ms; raw ${fmt(wide.raw)} req/s; ratio ${fmt(wide.rps / wide.raw, 2)}` },
    await waitsRow('P1', pg.url, p1),
  ]
}

async function batches(ctx: Context, core: CoreProcess, pg: PostgresServer): Promise<Row[]> {
  const { runs, seconds, warmup } = ctx
  ctx.log('P2 customEvent/batch of 20 vs COPY')
  const bodies = Array.from({ length: 16 }, (_, i) => customEventBatch(i))
  const p2 = { url: `${core.url}/api/ingestion/customEvent/batch`, headers: auth(core.key), bodies, connections: 32, seconds }
  await load({ ...p2, seconds: warmup })
  const projectId = await projectIdOf(pg.url)
  const batch = await medianOf(runs, async () => {
    const durable = await load(p2)
    const copy = await copyRowsPerSecond(pg.url, projectId, 200_000)
    return { eventsPerSecond: durable.requestsPerSecond * 20, p99: durable.p99Ms, copy }
  })
  // P2 waits on commits, not on the CPU: at 32 connections part of the machine stays idle, and more
  // batches waiting make each commit carry more. Past 64, events/s rise no further.
  const wide = await medianOf(runs, async () => {
    const durable = await load({ ...p2, connections: 64 })
    return { eventsPerSecond: durable.requestsPerSecond * 20, p99: durable.p99Ms }
  })
  return [
    { name: 'P2 customEvent/batch ×20, durable, 32 connections', value: `${fmt(batch.eventsPerSecond)} events/s, p99 ${fmt(batch.p99, 2)} ms` },
    { name: 'P2 COPY of the same rows', value: `${fmt(batch.copy)} rows/s` },
    { name: 'P2 ratio to COPY', value: fmt(batch.eventsPerSecond / batch.copy, 2), target: '≥ 0.75', met: batch.eventsPerSecond / batch.copy >= 0.75 },
    { name: 'P2 at 64 connections', value: `${fmt(wide.eventsPerSecond)} events/s, p99 ${fmt(wide.p99, 2)} ms; ratio to COPY ${fmt(wide.eventsPerSecond / batch.copy, 2)}` },
    await waitsRow('P2', pg.url, p2),
  ]
}

async function replayChunks(ctx: Context, core: CoreProcess, pg: PostgresServer): Promise<Row[]> {
  const { runs, seconds, warmup, rawUrl } = ctx
  ctx.log('P3 /events with rrweb chunks of up to 1 MB, recorded by the tracker')
  const chunks = replayChunkBodies(readRecording(), '__UNIQUE__')
  const chunkMb = chunks.reduce((n, c) => n + Buffer.byteLength(c), 0) / chunks.length / 1e6
  const p3 = { url: `${core.url}/api/ingestion/events`, headers: auth(core.key), bodies: chunks, unique: '__UNIQUE__', connections: 8, seconds }
  await load({ ...p3, seconds: warmup })
  const replay = await medianOf(runs, async () => {
    const durable = await load(p3)
    const baseline = await load({ ...p3, url: rawUrl })
    return { mbps: durable.requestsPerSecond * chunkMb, rawMbps: baseline.requestsPerSecond * chunkMb, p99: durable.p99Ms }
  })
  const storage = await replayStorage(pg.url)
  return [
    { name: `P3 /events, rrweb chunks of up to 1 MB (mean ${fmt(chunkMb, 2)} MB), durable`, value: `${fmt(replay.mbps, 1)} MB/s, p99 ${fmt(replay.p99, 1)} ms`, target: '≥ 150 MB/s', met: replay.mbps >= 150 },
    { name: 'P3 raw Bun.serve, parse only', value: `${fmt(replay.rawMbps, 1)} MB/s` },
    { name: 'P3 stored / raw bytes', value: `1/${fmt(storage.raw / storage.stored, 1)}`, target: '≤ 1/8', met: storage.stored * 8 <= storage.raw },
  ]
}

async function embeddedSingles(ctx: Context, dataDir: string): Promise<Row[]> {
  const { runs, seconds, warmup } = ctx
  ctx.log('P5 single customEvent on the embedded database')
  const embedded = await startCoreProcess({ DATA_DIR: dataDir })
  try {
    // The first start on an empty data directory runs initdb, whose memory is gone once it is done.
    const firstStartRss = (await peakRssMb(embedded.proc.pid)) ?? NaN
    resetPeakRss(embedded.proc.pid)
    const bodies = Array.from({ length: 64 }, (_, i) => customEvent(i))
    const p5 = { url: `${embedded.url}/api/ingestion/customEvent`, headers: auth(embedded.key), bodies, connections: 32, seconds }
    await load({ ...p5, seconds: warmup })
    // The raw endpoint between runs says how fast the machine was in the same minutes: shared
    // machines swing by a third from one quarter of an hour to the next.
    const pglite = await medianOf(runs, async () => {
      const durable = await load(p5)
      const baseline = await load({ ...p5, url: ctx.rawUrl })
      return { rps: durable.requestsPerSecond, p99: durable.p99Ms, raw: baseline.requestsPerSecond }
    })
    const embeddedRss = (await peakRssMb(embedded.proc.pid)) ?? NaN
    return [
      { name: 'P5 customEvent, committed (embedded PGlite, which does not fsync)', value: `${fmt(pglite.rps)} req/s, p99 ${fmt(pglite.p99, 2)} ms`, target: '≥ 10,000 req/s', met: pglite.rps >= 10_000 },
      { name: "P5 raw Bun.serve, parse only, between P5's runs (the machine's pace then)", value: `${fmt(pglite.raw)} req/s` },
      { name: 'core peak RSS, embedded, under P5 load', value: `${fmt(embeddedRss)} MB` },
      { name: 'core peak RSS, embedded, first start (initdb)', value: `${fmt(firstStartRss)} MB` },
    ]
  } finally {
    await embedded.stop()
  }
}

export async function main(args: string[]): Promise<void> {
  const { runs, seconds, only } = parseArgs(args)
  const measures = (phase: Phase) => only === undefined || only.includes(phase)
  const raw = startRawServer()
  const rawUrl = `http://127.0.0.1:${raw.port}/api/ingestion/customEvent`
  const ctx: Context = { runs, seconds, warmup: Math.min(2, seconds), rawUrl, log: (message) => console.error(`[bench] ${message}`) }
  let pg: PostgresServer | undefined
  let core: CoreProcess | undefined
  const dataDir = tempDir('sightline-bench-data-')
  const rows: Row[] = []
  try {
    if (measures('P1') || measures('P2') || measures('P3')) {
      ctx.log('starting Postgres and core')
      pg = await startPostgres()
      core = await startCoreProcess({ DATABASE_URL: pg.url })
      resetPeakRss(core.proc.pid)
      if (measures('P1')) rows.push(...(await singles(ctx, core, pg)))
      if (measures('P2')) rows.push(...(await batches(ctx, core, pg)))
      const peakRssP12 = (await peakRssMb(core.proc.pid)) ?? NaN
      resetPeakRss(core.proc.pid)
      if (measures('P3')) rows.push(...(await replayChunks(ctx, core, pg)))
      const peakRssP3 = (await peakRssMb(core.proc.pid)) ?? NaN
      // Under the phases measured: the target is for all three.
      const phases = (['P1', 'P2', 'P3'] as const).filter(measures)
      const peaks = [peakRssP12, peakRssP3].filter(Number.isFinite)
      const peakRss = peaks.length > 0 ? Math.max(...peaks) : NaN
      const under = phases.length === 3 ? 'P1–P3' : phases.join(', ')
      const detail = phases.length === 3 ? ` (P1–P2 ${fmt(peakRssP12)} MB, P3 ${fmt(peakRssP3)} MB)` : ''
      rows.push({ name: `core peak RSS under ${under} load`, value: `${fmt(peakRss)} MB${detail}`, target: '≤ 200 MB', met: peakRss <= 200 })
      await core.stop()
      core = undefined
      // The embedded phase runs with no Postgres, as an embedded deployment does: a server left up
      // goes on writing out what P2 and P3 stored (checkpoints), on the cores P5 measures. What it
      // wrote is then flushed to disk, so that P5's own writes do not wait behind gigabytes of it.
      await pg.stop()
      pg = undefined
      Bun.spawnSync(['sync'])
    }
    if (measures('P5')) rows.push(...(await embeddedSingles(ctx, dataDir)))
    // The rows in the order of the full table, whatever phases ran.
    const order = ['P1', 'P2', 'P3', 'P5', 'core peak RSS under', 'core peak RSS, embedded']
    rows.sort((a, b) => order.findIndex((o) => a.name.startsWith(o)) - order.findIndex((o) => b.name.startsWith(o)))
    const phases = only === undefined ? '' : `, ${only.join(' ')} only`
    console.log(table(`Core ingestion (medians of ${runs} runs of ${seconds} s${phases})`, rows))
  } finally {
    await core?.stop()
    raw.stop(true)
    await pg?.stop()
    removeDir(dataDir)
  }
}
