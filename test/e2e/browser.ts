import { afterEach } from 'bun:test'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

/**
 * Debian's Chromium, headless, driven by playwright-core, each browser with a fresh profile of its
 * own. `.ci/run` installs the package when it is missing.
 */
export const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-quic', '--disable-sync']

/** One request the tracker handed to the browser, as the page handed it (fetch or sendBeacon). */
export interface Handed {
  via: 'fetch' | 'beacon'
  url: string
  /** The body as sent (gzipped bytes stay gzipped). */
  body: Uint8Array
  gzip: boolean
}

export interface TestBrowser {
  context: BrowserContext
  page: Page
  /**
   * Every ingestion request the tracker handed to the browser in this tab from pages of `origin`, in
   * order. Read where the page recorded them (see HANDED_RECORDER); when the tab has left `origin`,
   * it opens a page there (any path: nothing runs on it) to read them.
   */
  handed(origin: string): Promise<Handed[]>
  close(): Promise<void>
}

export interface BrowserOptions {
  /** Origins every request to which is blocked, the way an ad blocker's list blocks a tracker's host. */
  block?: string[]
  /** Keep pages left in the back/forward cache, as Chromium does (Playwright turns it off). */
  backForwardCache?: boolean
  /**
   * Block all cookies, as the browser's setting does: pages then get SecurityError for localStorage
   * and sessionStorage too, and `handed` has nowhere to read from.
   */
  blockCookies?: boolean
}

/**
 * The blocklist is a Manifest V3 extension with one declarativeNetRequest rule per origin: how
 * Chromium's content blockers (uBlock Origin Lite, AdGuard) block a tracker's host, and it answers
 * `net::ERR_BLOCKED_BY_CLIENT` as they do. Playwright's `context.route` is not enough for this: a
 * beacon sent while a page unloads is never offered to its route handlers (it cannot be tied to a
 * frame any more, so Playwright lets it go), and neither does DevTools' `Network.setBlockedURLs`
 * stop it, so the unload path would slip past a routed blocklist. Routing also makes Playwright
 * answer every CORS preflight itself, which would hide the preflights these tests count.
 */
async function blocklistExtension(dir: string, origins: string[]): Promise<string> {
  const extension = join(dir, 'blocklist')
  await mkdir(extension)
  await writeFile(
    join(extension, 'manifest.json'),
    JSON.stringify({
      manifest_version: 3,
      name: 'test blocklist',
      version: '1.0',
      permissions: ['declarativeNetRequest'],
      host_permissions: ['<all_urls>'],
      declarative_net_request: { rule_resources: [{ id: 'blocklist', enabled: true, path: 'rules.json' }] },
    }),
  )
  const rules = origins.map((origin, i) => ({ id: i + 1, priority: 1, action: { type: 'block' }, condition: { urlFilter: `|${new URL(origin).origin}/` } }))
  await writeFile(join(extension, 'rules.json'), JSON.stringify(rules))
  return extension
}

/**
 * Records, in the page, every ingestion request the tracker hands to `fetch` or `navigator.sendBeacon`
 * (installed before any page script, so the tracker takes this `fetch` as its own). What the browser
 * then does with it (send, block, fail) is the network's business; this is what the page produced.
 * Each one is written to the tab's sessionStorage at once, synchronously: that is what still works
 * in a page that is unloading (Playwright drops what an unloading page reports through bindings or
 * the console), and sessionStorage outlives the page, per tab and origin. The tracker's own storage
 * is localStorage; the few keys it keeps in sessionStorage are far from this one's quota.
 */
const HANDED_KEY = 'sightline-test:handed'
const HANDED_RECORDER = `(() => {
  const KEY = ${JSON.stringify(HANDED_KEY)}
  const record = (via, url, bytes, gzip) => {
    let binary = ''
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000))
    const n = Number(sessionStorage.getItem(KEY) || 0)
    sessionStorage.setItem(KEY + ':' + n, JSON.stringify({ via, url, body: btoa(binary), gzip }))
    sessionStorage.setItem(KEY, String(n + 1))
  }
  const hand = (via, url, body, headers) => {
    // Where the page may not use sessionStorage (cookies blocked), nothing is recorded.
    try { sessionStorage } catch { return }
    url = new URL(String(url), location.href).href
    if (!url.includes('/api/ingestion/')) return
    const gzip = /[?&]compression=gzip/.test(url) || new Headers(headers || {}).get('content-encoding') === 'gzip'
    if (typeof body === 'string') record(via, url, new TextEncoder().encode(body), gzip)
    // A Blob is read asynchronously: not while unloading (the tracker's beacons are strings).
    else if (body instanceof Blob) body.arrayBuffer().then((buffer) => record(via, url, new Uint8Array(buffer), gzip))
    else if (body) record(via, url, new Uint8Array(body.buffer ? body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) : body), gzip)
  }
  const sendBeacon = Navigator.prototype.sendBeacon
  Navigator.prototype.sendBeacon = function (url, data) {
    hand('beacon', url, data)
    return sendBeacon.call(this, url, data)
  }
  const fetch = window.fetch
  window.fetch = function (input, init) {
    hand('fetch', input instanceof Request ? input.url : input, init && init.body, init && init.headers)
    return fetch.apply(this, arguments)
  }
})()`

const readHanded = (page: Page): Promise<Handed[]> =>
  page
    .evaluate((key) => Array.from({ length: Number(sessionStorage.getItem(key) || 0) }, (_, i) => JSON.parse(sessionStorage.getItem(`${key}:${i}`)!)), HANDED_KEY)
    .then((entries) => entries.map((e: { via: Handed['via']; url: string; body: string; gzip: boolean }) => ({ ...e, body: new Uint8Array(Buffer.from(e.body, 'base64')) })))

export async function openBrowser({ block = [], backForwardCache = false, blockCookies = false }: BrowserOptions = {}): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  const dir = await mkdtemp(join(tmpdir(), 'sightline-chromium-'))
  if (blockCookies) {
    // The profile's content setting for cookies: 2 blocks them for every site.
    await mkdir(join(dir, 'profile', 'Default'), { recursive: true })
    await writeFile(join(dir, 'profile', 'Default', 'Preferences'), JSON.stringify({ profile: { default_content_setting_values: { cookies: 2 } } }))
  }
  const args = [...ARGS]
  if (block.length) {
    const extension = await blocklistExtension(dir, block)
    args.push(`--disable-extensions-except=${extension}`, `--load-extension=${extension}`)
  }
  const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    args,
    // Playwright disables extensions by default (the blocklist is one), and the back/forward cache.
    ignoreDefaultArgs: [...(block.length ? ['--disable-extensions'] : []), ...(backForwardCache ? ['--disable-back-forward-cache'] : [])],
  })
  await context.addInitScript({ content: HANDED_RECORDER })
  const page = context.pages()[0] ?? (await context.newPage())
  return {
    context,
    page,
    async handed(origin) {
      if (new URL(page.url()).origin !== new URL(origin).origin) await page.goto(`${origin}/__handed`)
      return readHanded(page)
    },
    async close() {
      await context.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Waits until the blocklist is in force: the extension's rules load with the browser, and a test
 * must not start before they do. A blocked fetch fails in the page; a request that got through would
 * be answered.
 */
export async function blockedFrom(page: Page, origin: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const outcome = await page.evaluate((url) => fetch(url, { mode: 'no-cors' }).then(() => 'answered', (error) => String(error)), `${origin}/health/simple`)
    if (outcome !== 'answered') return
    if (Date.now() > deadline) throw new Error(`${origin} is still reachable from the page: the blocklist did not load`)
    await Bun.sleep(50)
  }
}

/** What a test opens (browsers, shops) is closed after it, last first: `const open = closedAfterEach()`. */
export function closedAfterEach(): <T extends { close(): unknown }>(thing: T) => T {
  const opened: { close(): unknown }[] = []
  afterEach(async () => {
    for (const thing of opened.splice(0).reverse()) await thing.close()
  })
  return (thing) => (opened.push(thing), thing)
}
