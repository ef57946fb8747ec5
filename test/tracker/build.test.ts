import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { ServiceTracker as SourceTracker } from '@sightline/tracker'
import { REPLAY_FLUSH_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { INTERNAL_NAMES, namesProperty } from '../../tracker/build'
import { builtTracker } from './helpers/build'
import { fakeClock, settle } from './helpers/clock'
import { openPage } from './helpers/dom'
import { SERVICE_BASE, fakeService } from './helpers/service'
import { replayEvents } from './helpers/tracker'

/** Budgets, gzip at its default level. */
const SCRIPT_BUDGET = 30 * 1024
const CORE_BUDGET = 8 * 1024
/**
 * Until the core meets its budget, it may not grow past 10,090 B, 9.85 KB (it is that): what is
 * added must be paid for. Automatic tracking, part of the core by design, is 1.7 KB of it (the core
 * without it would be 7.9 KB). (9,919 B became 10,090: no public method throwing into the page on
 * wrong-typed or malformed arguments (one guard around them all that warns and does nothing, names
 * that must be strings checked before they poison a batch, identifyUser without its argument), 121 B;
 * init given options it cannot use starting with the defaults instead of throwing, 36 B; a
 * Retry-After holding presence too, and a heartbeat's Retry-After holding every send, 15 B; a
 * failing CompressionStream sending uncompressed, 1 B saved. 9,659 B had become 9,919: what the
 * page made read-only left untracked instead of throwing into the page, 11 B; an outbox the storage refuses kept in memory instead of dropped,
 * 12 B saved; localStorage refused said in the log and in getConnectionStatus, 79 B; Retry-After
 * holding every send, not only the one it answered, and a drain stopping where the service took
 * nothing, 65 B; the heartbeat answered draining what a drain left, 4 B; a session another tab
 * started taken as new here too, with a full snapshot in it, 22 B; a logout in another tab
 * followed, 11 B; one tab at a time draining the outbox the tabs share, 59 B, and draining alone
 * where Web Locks refuse, 14 B; a full snapshot when a page is shown again from the back/forward
 * cache, 1 B; a sendBeacon that throws taken for a refused one, 6 B. 9,576 B had become 9,659:
 * `dropped.outbox` kept whole, the build had shortened it, 2 B; a gateway's 502 and 504 taken for
 * no answer, 24 B; advice for a fetch blocked on a first-party base, 57 B. It was 9.75 KB, at
 * 9.56 KB, until the core went from 9,783 to 9,576 B with no feature lost: 257 B saved, 162 of them
 * by the internal names the build shortens, and 50 B spent on leaving no timer after stop. Before
 * that 9.5 and 9 KB: URL redaction in privacy-first mode, error flood control, aborted requests
 * told apart and fixes that lost data, sent masked text or reported twice took 520 B.)
 */
const CORE_CEILING = 10_090

let dist: string
beforeAll(async () => {
  dist = await builtTracker()
}, 60_000)

/**
 * What the public API hands back, from a tracker class (the sources', or a build's), on a page where
 * something of every kind was dropped: the build shortens internal names, and a public one shortened
 * (`dropped.outbox` once was) would be missing here.
 */
async function publicResults(Tracker: typeof SourceTracker) {
  const key = 'sl_dev_public_names'
  // A previous page's outbox, full, let two requests go.
  const page = openPage('http://shop.test/', undefined, { localStorage: { [`sl_outbox:${key}:dropped`]: '2' } })
  const service = fakeService()
  service.catchBeacons(page.win)
  service.reply(({ path }) => (path.endsWith('/customEvent/batch') ? { status: 404 } : path.endsWith('/errors') ? { status: 413 } : { status: 200, body: { success: true } }))
  const clock = fakeClock()
  const tracker = Tracker.init(key, { ingestionUrl: SERVICE_BASE, logLevel: 'warn', enableAutomaticTracking: false }, { window: page.win, fetch: service.fetch, clock, scriptUrl: null })
  tracker.configureLogging({ enableConsole: false, enableStorage: true })
  tracker.customEvent('refused')
  const error = new Error('again and again')
  for (let i = 0; i < 2; i++) tracker.captureError(error)
  await clock.advance(TELEMETRY_FLUSH_MS)
  const results = {
    status: tracker.getConnectionStatus(),
    connection: await tracker.testConnection(),
    user: tracker.getUserInfo(),
    attributes: (await tracker.identifyUser({ userProperties: { name: 'Ada' } }), tracker.getUserAttributes()),
    logs: tracker.viewLogs(),
  }
  tracker.stop()
  await page.close()
  return results
}

function expectPublicNames(results: Awaited<ReturnType<typeof publicResults>>) {
  expect(results.status).toEqual({
    ingestionUrl: SERVICE_BASE,
    source: 'option',
    blocked: false,
    reachable: true,
    transport: 'fetch',
    online: true,
    stopped: null,
    queued: 0,
    dropped: { outbox: 2, error_flood: 1, rejected_404: 1, too_large: 1 },
    recommendations: [],
  })
  expect(results.status.dropped.outbox).toBe(2)
  expect(results.connection).toEqual({ ok: true, status: 200, latencyMs: 0, ingestionUrl: SERVICE_BASE, blocked: false })
  expect(Object.keys(results.user).sort()).toEqual(['attributes', 'endUserId', 'identified', 'preexistingUser', 'sessionId', 'windowId'])
  expect(results.user).toMatchObject({ attributes: {}, identified: false, preexistingUser: false })
  expect(results.attributes).toEqual({ name: 'Ada' })
  expect(results.logs.length).toBeGreaterThan(0)
  for (const entry of results.logs) expect(Object.keys(entry).sort()).toEqual(['level', 'message', 'time'])
}

const gzipped = async (path: string) => Bun.gzipSync(new Uint8Array(await Bun.file(path).arrayBuffer())).byteLength

describe('npm run build', () => {
  test(`t.js, the script-tag bundle with the recorder inside, is at most ${SCRIPT_BUDGET / 1024} KB gzipped`, async () => {
    const size = await gzipped(join(dist, 't.js'))
    console.log(`t.js: ${(size / 1024).toFixed(1)} KB gzipped`)
    expect(size).toBeLessThanOrEqual(SCRIPT_BUDGET)
    const text = await Bun.file(join(dist, 't.js')).text()
    expect(text.startsWith('(()=>{')).toBe(true)
    expect(text).not.toContain('import(')
  })

  /** Every module of the package but the recorder: the core an app loads before `start()`, gzipped. */
  async function coreFiles() {
    const esm = join(dist, 'esm')
    const files = (await readdir(esm)).filter((f) => f.endsWith('.js')).sort()
    const sizes: Record<string, number> = Object.fromEntries(await Promise.all(files.map(async (file) => [file, await gzipped(join(esm, file))])))
    const core = files.filter((file) => file !== 'record.js')
    const size = core.reduce((sum, file) => sum + sizes[file], 0)
    console.log(`esm: ${files.map((file) => `${file} ${(sizes[file] / 1024).toFixed(1)} KB`).join(', ')}; everything but the recorder ${(size / 1024).toFixed(2)} KB (gzipped)`)
    return { esm, files, core, size }
  }

  test("the package's core has nothing of rrweb and imports nothing statically; the recorder is imported lazily, by start()", async () => {
    const { esm, files, core } = await coreFiles()
    expect(files).toContain('record.js')
    expect((await Bun.file(join(esm, 'index.js')).text()).match(/import\("\.\/[a-z]+\.js"\)/g)).toEqual(['import("./record.js")'])
    for (const file of core) {
      const text = await Bun.file(join(esm, file)).text()
      expect(text).not.toContain('rrweb')
      expect(text).not.toMatch(/(^|;)import[^(]/)
    }
  })

  test(`the package's core, everything but the recorder, stays under ${(CORE_CEILING / 1024).toFixed(2)} KB gzipped while the budget is not met`, async () => {
    expect((await coreFiles()).size).toBeLessThanOrEqual(CORE_CEILING)
  })

  // Not met yet: everything but the recorder is 9.69 KB (automatic tracking, on by default, included).
  // Marked failing so that the suite says so; it turns red the day the budget is met, and `.failing` goes.
  test.failing(`not met yet: the package's core, everything but the recorder, is at most ${CORE_BUDGET / 1024} KB gzipped`, async () => {
    expect((await coreFiles()).size).toBeLessThanOrEqual(CORE_BUDGET)
  })

  test('the names the build shortens are no field of the wire, nor of what the tracker stores', async () => {
    const repo = join(import.meta.dir, '../..')
    const models = await Promise.all((await Array.fromAsync(new Bun.Glob('core/src/ingest/*/model.ts').scan(repo))).map((path) => Bun.file(join(repo, path)).text()))
    expect(models.length).toBeGreaterThan(10)
    // Sessions and parcels in localStorage (the public LogEntry is checked by the build, with the whole API).
    const declarations = (await Bun.file(join(dist, 'types/identity.d.ts')).text()) + (await Bun.file(join(dist, 'types/storage.d.ts')).text())
    const stored = ['Session', 'Parcel'].map((name) => declarations.match(new RegExp(`interface ${name} \\{[^}]*\\}`))![0])
    expect(stored.join()).toContain('start: number')
    expect(INTERNAL_NAMES.filter((name) => [...models, ...stored].some((text) => namesProperty(text, name)))).toEqual([])
    // The check sees a field when there is one.
    expect(namesProperty(stored.join(), 'start')).toBe(true)
    expect(namesProperty(models.join(), 'sessionId')).toBe(true)
  })

  test('the package runs as built: its recorder, a module of its own, masks what the core says and records', async () => {
    const { ServiceTracker } = await import(join(dist, 'esm/index.js'))
    const page = openPage('http://shop.test/', '<!doctype html><html><head><title>Shop</title></head><body><p>secret words</p><p class="shown">open words</p></body></html>')
    const service = fakeService()
    service.catchBeacons(page.win)
    const clock = fakeClock()
    const tracker = ServiceTracker.init('sl_dev_built', { ingestionUrl: SERVICE_BASE, logLevel: 'none', redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.shown'] } }, { window: page.win, fetch: service.fetch, clock, scriptUrl: null })
    tracker.start()
    await settle()
    tracker.customEvent('built')
    await clock.advance(REPLAY_FLUSH_MS)
    tracker.stop()
    await page.close()
    const replay = JSON.stringify(replayEvents(service))
    expect(replayEvents(service).map((event) => event.type)).toContain(2)
    expect(replay).toContain('open words')
    expect(replay).toContain('****** *****')
    expect(replay).not.toContain('secret')
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toEqual(['$pageview', 'built'])
    expect(service.to('/heartbeat')).toHaveLength(1)
  })

  test("the built package's public results keep every name: getConnectionStatus (dropped.outbox too), testConnection, getUserInfo, viewLogs", async () => {
    // The same page with the sources first: what the build must give back.
    expectPublicNames(await publicResults(SourceTracker))
    const { ServiceTracker } = await import(join(dist, 'esm/index.js'))
    expectPublicNames(await publicResults(ServiceTracker))
  })

  test('types for the package', async () => {
    const types = await Bun.file(join(dist, 'types', 'index.d.ts')).text()
    expect(types).toContain('export declare class ServiceTracker')
    expect(types).toContain('identifyUser(')
  })

  test('upload-sourcemaps is built for Node', async () => {
    const bin = join(dist, 'bin', 'upload-sourcemaps.js')
    expect((await Bun.file(bin).text()).startsWith('#!/usr/bin/env node')).toBe(true)
    const run = Bun.spawnSync(['node', bin, '--help'])
    expect(run.exitCode).toBe(0)
    expect(run.stdout.toString()).toContain('usage: upload-sourcemaps --release R --api-key K [--url BASE] DIR')
  })
})

describe('t.js on a page', () => {
  /** A site that serves the bundle under its relay prefix and takes what the tracker sends there. */
  let site: ReturnType<typeof Bun.serve>
  const received: { path: string; body: any; contentType: string | null }[] = []
  beforeAll(async () => {
    const script = await Bun.file(join(dist, 't.js')).arrayBuffer()
    site = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const { pathname } = new URL(request.url)
        if (pathname === '/shop/_sl/t.js') return new Response(script, { headers: { 'content-type': 'text/javascript' } })
        if (request.method === 'POST') {
          const text = await request.text()
          received.push({ path: pathname, body: JSON.parse(text), contentType: request.headers.get('content-type') })
          return Response.json({ success: true })
        }
        return new Response('not found', { status: 404 })
      },
    })
  })
  afterAll(() => site.stop(true))

  test('loaded from <origin><prefix>/t.js with data-api-key, it starts by itself and sends to <origin><prefix>', async () => {
    const origin = `http://127.0.0.1:${site.port}`
    const page = openPage(`${origin}/shop/products`, '<!doctype html><html><head><title>Shop</title></head><body><h1>Products</h1></body></html>', { scripts: true })
    const script = page.win.document.createElement('script')
    script.async = true
    script.src = '/shop/_sl/t.js'
    script.dataset.apiKey = 'sl_dev_from_tag'
    const loaded = new Promise((resolve) => script.addEventListener('load', resolve))
    page.win.document.head.appendChild(script)
    await loaded
    const tracker = (page.win as unknown as { ServiceTracker: { init(key: string): { getConnectionStatus(): { ingestionUrl: string; source: string }; customEvent(name: string): void; stop(): void } } }).ServiceTracker.init('sl_dev_from_tag')
    expect(tracker.getConnectionStatus()).toMatchObject({ ingestionUrl: `${origin}/shop/_sl`, source: 'script' })
    tracker.customEvent('from the script tag')
    for (let i = 0; i < 50 && !received.some((r) => r.path.endsWith('/customEvent/batch')); i++) await settle()
    tracker.stop()
    for (let i = 0; i < 50 && !received.some((r) => r.path.endsWith('/events')); i++) await settle()
    await page.close()
    const paths = new Set(received.map((r) => r.path))
    // The bundled recorder (canvas code cut out) records: the chunk holds the full snapshot.
    const replay = received.filter((r) => r.path === '/shop/_sl/api/ingestion/events').flatMap((r) => r.body.events)
    expect(replay.map((e: { type: number }) => e.type)).toContain(2)
    expect(paths).toContain('/shop/_sl/api/ingestion/customEvent/batch')
    expect(paths).toContain('/shop/_sl/api/ingestion/heartbeat')
    const events = received.filter((r) => r.path.endsWith('/customEvent/batch')).flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))
    expect(events).toContain('$pageview')
    expect(events).toContain('from the script tag')
  })

  test("t.js's public results keep every name too (a bundle of its own, shortened apart)", async () => {
    const origin = `http://127.0.0.1:${site.port}`
    const page = openPage(`${origin}/shop/`, undefined, { scripts: true })
    const script = page.win.document.createElement('script')
    script.async = true
    script.src = '/shop/_sl/t.js'
    const loaded = new Promise((resolve) => script.addEventListener('load', resolve))
    page.win.document.head.appendChild(script)
    await loaded
    const Tracker = (page.win as unknown as { ServiceTracker: typeof SourceTracker }).ServiceTracker
    try {
      expectPublicNames(await publicResults(Tracker))
    } finally {
      await page.close()
    }
  })
})
