import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cp, mkdtemp, readdir, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ServiceTracker as SourceTracker } from '@sightline/tracker'
import { HEARTBEAT_MS, REPLAY_FLUSH_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
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
 * What `start()` and `testConnection()` import, each a module of its own in the package: the core is
 * what an app loads before, `index.js`.
 */
const LOADED_LATER = ['auto.js', 'record.js', 'presence.js', 'connection.js']
/** Modules of the package an app imports itself, never the core: `@sightline/tracker/user-auth`. */
const IMPORTED_APART = ['user-auth.js']

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

  /** The package's modules, gzipped: the core (`index.js`, what an app loads before `start()`) and what it imports later. */
  async function esmFiles() {
    const esm = join(dist, 'esm')
    const files = (await readdir(esm)).filter((f) => f.endsWith('.js')).sort()
    const sizes: Record<string, number> = Object.fromEntries(await Promise.all(files.map(async (file) => [file, await gzipped(join(esm, file))])))
    console.log(`esm, gzipped: ${files.map((file) => `${file} ${(sizes[file] / 1024).toFixed(2)} KB`).join(', ')}`)
    return { esm, files, sizes }
  }

  test('the core imports nothing statically and nothing of rrweb; start() imports the recorder, automatic tracking and presence, testConnection() its test', async () => {
    const { esm, files } = await esmFiles()
    expect(files).toEqual(['index.js', ...LOADED_LATER, ...IMPORTED_APART].sort())
    const core = await Bun.file(join(esm, 'index.js')).text()
    expect([...(core.match(/import\("\.\/[a-z]+\.js"\)/g) ?? [])].sort()).toEqual(LOADED_LATER.map((file) => `import("./${file}")`).sort())
    expect(core).not.toContain('rrweb')
    for (const file of files.filter((file) => file !== 'record.js')) {
      const text = await Bun.file(join(esm, file)).text()
      expect(text).not.toContain('rrweb')
      expect(text).not.toMatch(/(^|;)import[^(]/)
    }
  })

  test(`the package's core, what an app loads before start(), is at most ${CORE_BUDGET / 1024} KB gzipped`, async () => {
    const { sizes } = await esmFiles()
    expect(sizes['index.js']).toBeLessThanOrEqual(CORE_BUDGET)
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
    // Loaded before start() asks for them, which then finds them at once: read for the first time, on
    // a busy machine, the recorder could still be loading when the test stops the tracker.
    await Promise.all(['record.js', 'auto.js', 'presence.js'].map((module) => import(join(dist, 'esm', module))))
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

  test('the modules start() imports start in the order they arrive: automatic tracking after presence leaves it beating; stop ends both', async () => {
    // The package as built, but auto.js arrives when the test says: a module of the same exports whose top-level await waits.
    const esm = await mkdtemp(join(tmpdir(), 'sightline-late-auto-'))
    await cp(join(dist, 'esm'), esm, { recursive: true })
    await rename(join(esm, 'auto.js'), join(esm, 'auto.late.js'))
    let arrive!: () => void
    ;(globalThis as { autoArrives?: Promise<void> }).autoArrives = new Promise<void>((resolve) => (arrive = resolve))
    await Bun.write(join(esm, 'auto.js'), "await globalThis.autoArrives\nexport * from './auto.late.js'\n")
    const { ServiceTracker } = await import(join(esm, 'index.js'))
    const page = openPage('http://shop.test/')
    const service = fakeService()
    service.catchBeacons(page.win)
    const clock = fakeClock()
    const tracker = ServiceTracker.init('sl_dev_late_auto', { ingestionUrl: SERVICE_BASE, logLevel: 'none' }, { window: page.win, fetch: service.fetch, clock, scriptUrl: null })
    tracker.start()
    await settle()
    expect(service.to('/heartbeat')).toHaveLength(1)
    // An error thrown while automatic tracking is on its way is kept for it.
    page.win.dispatchEvent(new page.win.ErrorEvent('error', { message: 'thrown early', error: new Error('thrown early') }))
    arrive()
    await settle()
    await clock.advance(HEARTBEAT_MS)
    expect(service.to('/heartbeat')).toHaveLength(2)
    expect(service.to('/customEvent/batch').flatMap((r) => r.body.events.map((e: { eventName: string }) => e.eventName))).toContain('$pageview')
    expect(service.to('/errors').flatMap((r) => r.body.errors.map((e: { message: string }) => e.message))).toEqual(['thrown early'])
    tracker.stop()
    await settle()
    expect(clock.pending()).toEqual([])
    await page.close()
    delete (globalThis as { autoArrives?: Promise<void> }).autoArrives
    await rm(esm, { recursive: true, force: true })
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

  test('@sightline/tracker/user-auth, as built and exported, sends WIRE.md\'s body and resolves with the canonical id', async () => {
    const pkg = await Bun.file(join(import.meta.dir, '../../tracker/package.json')).json()
    expect(pkg.exports['./user-auth']).toEqual({ types: './dist/types/user-auth.d.ts', import: './dist/esm/user-auth.js' })
    const { sendUserAuth } = await import(join(dist, 'esm/user-auth.js'))
    const sent: { url: string; init: RequestInit }[] = []
    const fetch = async (url: string, init: RequestInit) => (sent.push({ url, init }), Response.json({ success: true, endUserId: 'person-1' }))
    const answer = await sendUserAuth({ ingestionUrl: 'https://shop.test/_sl', apiKey: 'sl_live_k', userId: 'u', sessionId: 's', userAttributes: { email: 'a@b.test' }, authFields: ['email'], fetch })
    expect(answer).toBe('person-1')
    expect(sent[0].url).toBe('https://shop.test/_sl/api/ingestion/user/auth')
    expect(JSON.parse(sent[0].init.body as string)).toEqual({ userId: 'u', userAttributes: { email: 'a@b.test' }, sessionId: 's', authFields: ['email'] })
    expect(new Headers(sent[0].init.headers).get('authorization')).toBe('Bearer sl_live_k')
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
