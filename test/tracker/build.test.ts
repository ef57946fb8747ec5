import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { builtTracker } from './helpers/build'
import { settle } from './helpers/clock'
import { openPage } from './helpers/dom'

/** Budgets, gzip at its default level. */
const SCRIPT_BUDGET = 30 * 1024
const CORE_BUDGET = 8 * 1024

let dist: string
beforeAll(async () => {
  dist = await builtTracker()
}, 60_000)

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

  test(`the package's core, without the recorder, is at most ${CORE_BUDGET / 1024} KB gzipped; the rest loads on start()`, async () => {
    const esm = join(dist, 'esm')
    const sizes: Record<string, number> = Object.fromEntries(await Promise.all(['index.js', 'auto.js', 'record.js'].map(async (file) => [file, await gzipped(join(esm, file))])))
    console.log(`esm: ${Object.entries(sizes).map(([file, size]) => `${file} ${(size / 1024).toFixed(1)} KB`).join(', ')} (gzipped)`)
    expect(sizes['index.js']).toBeLessThanOrEqual(CORE_BUDGET)
    const core = await Bun.file(join(esm, 'index.js')).text()
    // Nothing of rrweb in the core; the two start-time modules are imported lazily, nothing statically.
    expect(core).not.toContain('rrweb')
    expect(core.match(/import\("\.\/[a-z]+\.js"\)/g)?.sort()).toEqual(['import("./auto.js")', 'import("./record.js")'])
    expect(core).not.toMatch(/(^|;)import[^(]/)
    expect((await readdir(esm)).filter((f) => f.endsWith('.js')).sort()).toEqual(['auto.js', 'index.js', 'record.js'])
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
})
