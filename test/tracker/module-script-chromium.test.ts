import { beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { builtTracker } from './helpers/build'
import { chromiumSite } from './helpers/chromium'

/**
 * t.js, as built, loaded by a module script tag in headless Chromium: a module has no
 * `document.currentScript`, and runs after the page is parsed (or, async, when it has arrived). The
 * relay is at a prefix of its own, `/relay`, so a prefix not read from the tag would show (sends
 * would go to `/_sl`).
 */

const PAGES: Record<string, string> = {
  // In the head, before the page's content: it runs after parsing, as a deferred script does.
  '/module': `<script type="module" src="/relay/t.js" data-api-key="sl_dev_module" data-release="shop@2"></script>`,
  '/async': `<script type="module" async src="/relay/t.js" data-api-key="sl_dev_module" data-release="shop@2"></script>`,
  // Two module tags of one URL run it once: the first tag's key starts the tracker.
  '/two': `<script type="module" src="/relay/t.js" data-api-key="sl_dev_first"></script>
    <script type="module" src="/relay/t.js" data-api-key="sl_dev_second"></script>`,
  // Another vendor's module tag, above ours, with a `data-api-key` of its own: its key is not ours to send.
  '/other': `<script type="module" src="/widget.js" data-api-key="sl_dev_other"></script>
    <script type="module" src="/relay/t.js" data-api-key="sl_dev_module"></script>`,
  // Ours without a key (started in its onload), another's with one: nothing starts by itself.
  '/keyless': `<script type="module" src="/widget.js" data-api-key="sl_dev_other"></script>
    <script type="module" src="/relay/t.js"></script>`,
}

const chromium = chromiumSite(async (_, url) =>
  url.pathname === '/widget.js'
    ? new Response('', { headers: { 'content-type': 'text/javascript' } })
    : url.pathname === '/relay/t.js'
    ? new Response(Bun.file(join(await builtTracker(), 't.js')), { headers: { 'content-type': 'text/javascript' } })
    : new Response(`<!doctype html><html><head>${PAGES[url.pathname] ?? ''}</head><body><p>A page</p></body></html>`, { headers: { 'content-type': 'text/html' } }),
)
const { sends } = chromium
/** Every ingestion request the page made: its URL, and its key (in the Authorization header or in the body). */
const requests: { url: string; key: string }[] = []

beforeAll(() => {
  chromium.browser.page.on('request', (request) => {
    if (!request.url().includes('/api/ingestion/')) return
    const key = /sl_dev_[a-z]+/.exec((request.headers().authorization ?? '') + (request.postData() ?? ''))?.[0] ?? ''
    requests.push({ url: new URL(request.url()).pathname, key })
  })
})

declare const ServiceTracker: typeof import('@sightline/tracker').ServiceTracker

async function open(path: string) {
  // What the last page sends as it leaves is not this one's.
  await chromium.browser.page.goto('about:blank')
  await Bun.sleep(300)
  sends.length = requests.length = 0
  await chromium.browser.page.goto(chromium.site.url + path)
  for (let i = 0; i < 200 && !sends.some((s) => s.path === '/customEvent/batch'); i++) await Bun.sleep(25)
}

describe('t.js by a module script tag, in headless Chromium', () => {
  for (const path of ['/module', '/async']) {
    test(`${path}: data-api-key starts the tracker, data-release is its release, and it sends under the tag's relay prefix`, async () => {
      await open(path)
      expect(sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events.map((e: { eventName: string }) => e.eventName))).toContain('$pageview')
      // The same key gives the running tracker: where it sends, and the release its error reports carry.
      const status = await chromium.browser.page.evaluate(() => {
        const tracker = ServiceTracker.init('sl_dev_module')
        tracker.captureError(new Error('from a module page'))
        return tracker.getConnectionStatus()
      })
      expect(status).toMatchObject({ ingestionUrl: chromium.site.url + '/relay', source: 'script' })
      for (let i = 0; i < 200 && !sends.some((s) => s.path === '/errors'); i++) await Bun.sleep(25)
      expect(sends.filter((s) => s.path === '/errors').flatMap((s) => s.body.errors.map((e: { release?: string }) => e.release))).toEqual(['shop@2'])
      expect(requests.length).toBeGreaterThan(0)
      expect(requests.filter((r) => !r.url.startsWith('/relay/api/ingestion/'))).toEqual([])
    }, 60_000)
  }

  test("two module tags of one URL: the script runs once, and the first tag's key is the tracker's", async () => {
    await open('/two')
    await Bun.sleep(300)
    expect(sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events.map((e: { eventName: string }) => e.eventName)).filter((name: string) => name === '$pageview')).toHaveLength(1)
    expect([...new Set(requests.map((r) => r.key))]).toEqual(['sl_dev_first'])
    expect(requests.filter((r) => !r.url.startsWith('/relay/api/ingestion/'))).toEqual([])
  }, 60_000)

  test("another module script's data-api-key (above t.js's tag) is neither the key nor where it sends", async () => {
    await open('/other')
    expect(sends.filter((s) => s.path === '/customEvent/batch').flatMap((s) => s.body.events.map((e: { eventName: string }) => e.eventName))).toContain('$pageview')
    expect([...new Set(requests.map((r) => r.key))]).toEqual(['sl_dev_module'])
    expect(requests.filter((r) => !r.url.startsWith('/relay/api/ingestion/'))).toEqual([])
  }, 60_000)

  test("t.js's module tag without data-api-key starts nothing, whatever key another module script has", async () => {
    await open('/keyless')
    await Bun.sleep(500)
    expect(requests).toEqual([])
  }, 60_000)
})
