import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import type { AutomaticTrackingOptions } from '@sightline/tracker'
import { RAGE_CLICKS, RAGE_WINDOW_MS } from '@sightline/tracker/auto/clicks'
import { ERROR_KEY_CHARS, ERROR_MESSAGE_MAX_CHARS, ERROR_STACK_MAX_CHARS, ERROR_WINDOW_MS, ERRORS_PER_WINDOW } from '@sightline/tracker/messages'
import { LOG_MESSAGE_MAX_CHARS } from '@sightline/tracker/auto/console'
import { TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { MESSAGE_LIMIT_BYTES, STACK_LIMIT_BYTES } from '@sightline/core/ingest/shared/text'
import { fakeClock, settle } from './helpers/clock'
import { SERVICE_BASE } from './helpers/service'
import { closeAll, tracked, type Tracked } from './helpers/tracker'

afterEach(closeAll)

/** A small API for the page's own requests: /ok answers 200, /fail 500, with CORS for the page. */
let api: ReturnType<typeof Bun.serve>
let apiBase: string
beforeAll(() => {
  api = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const headers = { 'access-control-allow-origin': request.headers.get('origin') ?? '*', 'access-control-allow-methods': 'GET, POST' }
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers })
      return new Response(new URL(request.url).pathname === '/fail' ? 'broken' : 'ok', { status: new URL(request.url).pathname === '/fail' ? 500 : 200, headers })
    },
  })
  apiBase = `http://127.0.0.1:${api.port}`
})
afterAll(() => api.stop(true))

const only = (options: AutomaticTrackingOptions): AutomaticTrackingOptions => ({
  pageViews: false,
  navigation: false,
  clicks: false,
  rageClicks: false,
  forms: false,
  console: false,
  network: false,
  errors: false,
  spans: false,
  ...options,
})

async function started(options: AutomaticTrackingOptions, html?: string, url?: string): Promise<Tracked> {
  const t = tracked({ automaticTrackingOptions: options }, { html, url })
  t.tracker.start()
  await settle()
  return t
}

const customEvents = (t: Tracked) => t.service.to('/customEvent/batch').flatMap((r) => r.body.events)

/** An XMLHttpRequest of the page, on `xhr` (a new one by default); resolves when it has ended. */
const xhrSend = (t: Tracked, method: string, url: string, xhr = new t.win.XMLHttpRequest()) =>
  new Promise<void>((resolve) => {
    xhr.open(method, url)
    xhr.addEventListener('loadend', () => resolve(), { once: true })
    xhr.send()
  })

describe('page views and navigation', () => {
  test('a page view at start and at each change of path; a navigation event for every change of URL', async () => {
    const t = await started(only({ pageViews: true, navigation: true }), undefined, 'http://shop.test/home')
    const { history } = t.win
    history.pushState({}, '', '/products')
    history.replaceState({}, '', '/products?sort=price')
    history.replaceState({}, '', '/products?sort=price')
    history.replaceState({}, '', '/cart')
    history.pushState({}, '', '/cart#top')
    history.back()
    await settle()
    t.win.dispatchEvent(new t.win.PopStateEvent('popstate'))
    await t.clock.advance(100)
    expect(customEvents(t).map((e) => [e.eventName, e.eventProperties.path ?? e.eventProperties.type, e.eventProperties.to ?? e.eventProperties.url])).toEqual([
      ['$pageview', '/home', 'http://shop.test/home'],
      ['$navigation', 'push', 'http://shop.test/products'],
      ['$pageview', '/products', 'http://shop.test/products'],
      // Privacy-first (the default): parameters without their values, which may be what someone typed.
      ['$navigation', 'replace', 'http://shop.test/products?sort=[redacted]'],
      ['$navigation', 'replace', 'http://shop.test/cart'],
      ['$pageview', '/cart', 'http://shop.test/cart'],
      ['$navigation', 'push', 'http://shop.test/cart#top'],
      ['$pageview', '/cart', 'http://shop.test/cart#top'],
      ['$navigation', 'pop', 'http://shop.test/cart'],
      ['$pageview', '/cart', 'http://shop.test/cart'],
    ])
  })

  test('stop puts history back as it was', async () => {
    const t = tracked()
    const push = t.win.history.pushState
    t.tracker.start()
    await settle()
    expect(t.win.history.pushState).not.toBe(push)
    t.tracker.stop()
    expect(t.win.history.pushState).toBe(push)
  })
})

describe('clicks and forms', () => {
  test('a click reports the element it meant (the button, not the icon inside)', async () => {
    const t = await started(only({ clicks: true }), '<main><a href="/next" class="cta big extra"><i>icon</i> Next</a></main>', 'http://shop.test/')
    t.win.document.querySelector('i')!.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    await t.clock.advance(100)
    expect(customEvents(t)).toEqual([
      expect.objectContaining({ eventName: '$click', eventProperties: { tag: 'a', selector: 'main > a.cta.big', href: 'http://shop.test/next' } }),
    ])
  })

  test('visibility-first: a click on a large element (the page background, a long list, a log) sends no text; a button, a link, a small card theirs', async () => {
    const html = `<button id="buy">Buy <b>now</b></button><a id="more" href="/more">More orders</a>
      <div id="card"><h3>Tea</h3><p>Two boxes, shipped</p><p>4 EUR</p></div>
      <ul id="orders">${Array.from({ length: 500 }, (_, i) => `<li>Order ${i}</li>`).join('')}</ul><pre id="log">${'x'.repeat(5000)}</pre>`
    const t = tracked({ redactionStrategy: { mode: 'visibility-first' }, automaticTrackingOptions: only({ clicks: true }) }, { html, url: 'http://shop.test/' })
    t.tracker.start()
    await settle()
    const doc = t.win.document
    for (const el of [...['buy', 'more', 'card', 'orders', 'log'].map((id) => doc.getElementById(id)!), doc.body]) el.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    await t.clock.advance(100)
    expect(customEvents(t).map((e) => [e.eventProperties.tag, e.eventProperties.text])).toEqual([
      ['button', 'Buy now'],
      ['a', 'More orders'],
      ['div', 'Tea Two boxes, shipped 4 EUR'],
      ['ul', undefined],
      ['pre', undefined],
      ['body', undefined],
    ])
  })

  test("a clicked link's href goes without its query, fragment and credentials; of a mailto: or data: link only the scheme", async () => {
    // In this order: happy-dom follows a clicked link, and the page's URL is the base of the next one.
    const links = [
      '#top',
      '/files/report.pdf?X-Signature=SECRET-TOKEN#p2',
      'https://someone:SECRET-PASSWORD@files.test/export',
      'mailto:SECRET-ADDRESS@example.com?subject=Hi',
      'data:text/csv,name%0ASECRET-CSV-ROW',
    ]
    const t = await started(only({ clicks: true }), links.map((href) => `<a href="${href}">link</a>`).join(''), 'http://shop.test/')
    for (const link of t.win.document.querySelectorAll('a')) link.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    await t.clock.advance(100)
    expect(customEvents(t).map((e: { eventProperties: { href?: string } }) => e.eventProperties.href)).toEqual([
      'http://shop.test/',
      'http://shop.test/files/report.pdf',
      'https://files.test/export',
      'mailto:',
      'data:',
    ])
    expect(t.service.sent.map((r) => r.text).join('\n')).not.toContain('SECRET')
  })

  test('a rage click is reported once per burst, however long it goes on; a pause begins the next', async () => {
    const t = await started(only({ rageClicks: true }), '<button id="pay">Pay</button>')
    // A person's pointer (happy-dom's events have no isTrusted: what a browser's input would say; a click's count in detail).
    const click = () => t.win.document.getElementById('pay')!.dispatchEvent(Object.defineProperty(new t.win.MouseEvent('click', { bubbles: true, clientX: 10, clientY: 10, detail: 1 }), 'isTrusted', { value: true }))
    // About 3 a second: at every click from the third, the last three are within the window.
    for (let i = 0; i < 8; i++) {
      click()
      await t.clock.advance(RAGE_WINDOW_MS / RAGE_CLICKS + 20)
    }
    await t.clock.advance(RAGE_WINDOW_MS)
    for (let i = 0; i < RAGE_CLICKS; i++) click()
    await t.clock.advance(100)
    expect(customEvents(t).map((e) => e.eventName)).toEqual(['$rageclick', '$rageclick'])
  })

  test("a click on a label is one click, not also the click the label passes on to its control; two are no rage click", async () => {
    const t = await started(only({ clicks: true, rageClicks: true }), '<label id="terms">I agree <input type="checkbox"></label><label id="news" for="n">News</label><input id="n" type="checkbox">')
    // The browser clicks the control at the same place, in the same task.
    const click = (id: string) => t.win.document.getElementById(id)!.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true, cancelable: true }))
    click('terms')
    await t.clock.advance(200)
    click('terms')
    await t.clock.advance(RAGE_WINDOW_MS)
    click('news')
    await t.clock.advance(100)
    expect((t.win.document.getElementById('n') as HTMLInputElement).checked).toBe(true)
    expect(customEvents(t).map((e) => [e.eventName, e.eventProperties.id])).toEqual([
      ['$click', 'terms'],
      ['$click', 'terms'],
      ['$click', 'news'],
    ])
  })

  test('a submit reports the form, never its values', async () => {
    const t = await started(only({ forms: true }), '<form name="signup" method="POST" action="/join?ref=x"><input name="email" value="ada@example.com"></form>')
    t.win.document.querySelector('form')!.dispatchEvent(new t.win.Event('submit', { bubbles: true }))
    await t.clock.advance(100)
    expect(customEvents(t).map((e) => e.eventProperties)).toEqual([{ name: 'signup', action: 'http://shop.test/join', method: 'post', fields: 1 }])
    expect(JSON.stringify(t.service.sent.map((r) => r.body))).not.toContain('ada@example.com')
  })
})

describe('console', () => {
  test('console.warn and console.error become logs (the page still prints them); not log or info', async () => {
    const printed: unknown[][] = []
    const t = tracked({ automaticTrackingOptions: only({ console: true }) })
    t.win.console.warn = (...args: unknown[]) => void printed.push(args)
    t.win.console.error = (...args: unknown[]) => void printed.push(args)
    t.tracker.start()
    await settle()
    const error = new RangeError('out of range')
    t.win.console.warn('low stock', { sku: 'A1', left: 2 })
    t.win.console.error('failed:', error)
    t.win.console.log('not sent')
    t.win.console.info('not sent either')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(printed).toEqual([['low stock', { sku: 'A1', left: 2 }], ['failed:', error]])
    const [request] = t.service.to('/logs')
    const owner = { sessionId: t.tracker.getSessionId(), endUserId: t.tracker.getUserInfo().endUserId }
    expect(request.body).toEqual({
      ...owner,
      logs: [
        { ...owner, level: 'warn', message: 'low stock {"sku":"A1","left":2}', url: 'http://shop.test/', timestampMs: t.clock.now() - TELEMETRY_FLUSH_MS },
        { ...owner, level: 'error', message: 'failed: RangeError: out of range', stack: error.stack, url: 'http://shop.test/', timestampMs: t.clock.now() - TELEMETRY_FLUSH_MS },
      ],
    })
  })

  test('what cannot become a string (an object without a prototype) is still logged by the page, and sent', async () => {
    const printed: unknown[][] = []
    const t = tracked({ automaticTrackingOptions: only({ console: true }) })
    t.win.console.warn = (...args: unknown[]) => void printed.push(args)
    t.tracker.start()
    await settle()
    const bare = Object.assign(Object.create(null), { sku: 'A1' })
    t.win.console.warn(bare, 'left')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(printed).toEqual([[bare, 'left']])
    expect(t.service.to('/logs')[0].body.logs.map((log: { message: string }) => log.message)).toEqual(['{"sku":"A1"} left'])
  })

  test('a huge object logged is read only as far as the line is sent: no freeze of the page; cycles still as text', async () => {
    const t = tracked({ automaticTrackingOptions: only({ console: true }) })
    t.win.console.error = () => {}
    t.tracker.start()
    await settle()
    const items = Array.from({ length: 200_000 }, (_, i) => ({ id: i, name: `item ${i}` }))
    const byId = Object.fromEntries(items.map((item) => [`k${item.id}`, item]))
    const numbers = Array.from({ length: 1_000_000 }, (_, i) => i)
    const huge = [items, byId, numbers]
    const cyclic: Record<string, unknown> = { ...byId }
    cyclic.k5 = cyclic
    const small = { a: 1, b: [1, undefined, () => 0, { c: null, d: undefined, at: new Date(0) }], s: 'x"y', n: NaN }
    const timed = (work: () => unknown) => {
      const start = performance.now()
      work()
      return performance.now() - start
    }
    // Against the whole JSON of the same values through a replacer, as they were read before (80-130 ms
    // each), timed here too so that a busy machine slows both.
    const wholeMs = huge.reduce((sum, value) => sum + timed(() => JSON.stringify(value, (_, item) => item)), 0)
    const loggedMs = huge.reduce((sum, value) => sum + timed(() => t.win.console.error('state:', value)), 0)
    t.win.console.error('state:', cyclic)
    t.win.console.error('state:', small)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(loggedMs).toBeLessThan(wholeMs / 3)
    // (happy-dom logs its refusal to load rrweb's iframe with console.error too.)
    const messages = t.service.to('/logs').flatMap((r) => r.body.logs.map((log: { message: string }) => log.message)).filter((message: string) => message.startsWith('state:'))
    const whole = (value: unknown) => 'state: ' + JSON.stringify(value)
    expect(messages).toEqual([...huge.map((value) => whole(value).slice(0, LOG_MESSAGE_MAX_CHARS)), 'state: [object Object]', whole(small)])
  })

  /** The messages of the page's console lines sent, without happy-dom's own (it logs its refusal to load rrweb's iframe with console.error, when that comes first). */
  const logged = (t: Tracked): string[] =>
    t.service.to('/logs').flatMap((r) => r.body.logs.map((log: { message: string }) => log.message)).filter((message: string) => !message.includes('Iframe page loading is disabled'))

  test('a format string is sent as the console shows it: %c takes its CSS, %s %d %i %f %o substitute, %% is %, a specifier with no argument stays', async () => {
    const t = tracked({ automaticTrackingOptions: only({ console: true }) })
    t.win.console.warn = () => {}
    t.win.console.error = () => {}
    t.tracker.start()
    await settle()
    t.win.console.warn('%cSightline%c ready', 'color: red; font-size: 20px', '')
    t.win.console.error('Warning: %s failed for %d items (%i left, %f%% done) in %o', 'save', 3.7, '2px', '12.5', { id: 'A1' }, 'extra', 4)
    t.win.console.error('Warning: Each child in a list should have a unique "key" prop.%s%s See https://react.dev/link/warning-keys?token=SECRET for more.', '\n\nCheck the render method of `List`.', '')
    t.win.console.warn('%s and %d and %c and %j', 'one')
    t.win.console.warn('100%% sure, %s')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(logged(t)).toEqual([
      'Sightline ready',
      'Warning: save failed for 3 items (2 left, 12.5% done) in {"id":"A1"} extra 4',
      // URLs in the line still go as page URLs do: privacy-first, no parameter values.
      'Warning: Each child in a list should have a unique "key" prop.\n\nCheck the render method of `List`. See https://react.dev/link/warning-keys?token=[redacted] for more.',
      'one and %d and %c and %j',
      '100% sure, %s',
    ])
  })

  test('a line whose first argument is no string is sent as before: every argument as text, none substituted', async () => {
    const t = tracked({ automaticTrackingOptions: only({ console: true }) })
    t.win.console.warn = () => {}
    t.tracker.start()
    await settle()
    t.win.console.warn({ code: '%s' }, 'left', '%c', 'color: red')
    t.win.console.warn(7, '%d', 8)
    t.win.console.warn()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(logged(t)).toEqual(['{"code":"%s"} left %c color: red', '7 %d 8', ''])
  })

  test("the tracker's own warnings are not sent as the page's logs", async () => {
    const t = tracked({ logLevel: 'warn', automaticTrackingOptions: only({ console: true }) })
    t.win.console.warn = () => {}
    t.tracker.start()
    await settle()
    t.tracker.customEvent('')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/logs')).toEqual([])
    expect(t.tracker.viewLogs()).toHaveLength(1)
  })
})

describe('network and spans', () => {
  test('fetch: a span for each request, a network error for the failed ones; never the tracker’s own', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) })
    t.tracker.start()
    await settle()
    await t.win.fetch(`${apiBase}/ok?token=abc`)
    await t.win.fetch(`${apiBase}/fail`, { method: 'post' })
    await t.win.fetch('http://127.0.0.1:1/refused').catch(() => {})
    await t.win.fetch(`${SERVICE_BASE}/api/ingestion/customEvent`, { method: 'POST', body: '{}' }).catch(() => {})
    t.tracker.customEvent('own request')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const spans = t.service.to('/spans/batch').flatMap((r) => r.body.spans)
    expect(spans.map((s: any) => [s.name, s.kind, s.status.code, s.attributes['http.status_code']])).toEqual([
      ['GET /ok', 'client', 'ok', 200],
      ['POST /fail', 'client', 'error', 500],
      ['GET /refused', 'client', 'error', null],
    ])
    for (const span of spans) {
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
      expect(span.endTimeMs).toBeGreaterThanOrEqual(span.startTimeMs)
    }
    expect(spans[0].attributes['http.url']).toBe(`${apiBase}/ok`)
    const errors = t.service.to('/network').flatMap((r) => r.body.errors)
    expect(errors.map((e: any) => [e.method, e.url, e.status, e.errorType])).toEqual([
      ['POST', `${apiBase}/fail`, 500, 'http'],
      ['GET', 'http://127.0.0.1:1/refused', null, 'network'],
    ])
    expect(errors[0]).toMatchObject({ statusText: 'Internal Server Error', errorMessage: 'HTTP 500 Internal Server Error', sessionId: t.tracker.getSessionId(), endUserId: t.tracker.getUserInfo().endUserId, requestId: expect.any(String), duration: expect.any(Number) })
  })

  test("sending to the page's own origin (a relay at its root): the page's requests there are reported, the tracker's own (ingestion, the reachability probe) are not", async () => {
    const t = tracked({ ingestionUrl: apiBase, automaticTrackingOptions: only({ network: true, spans: true }) })
    t.tracker.start()
    await settle()
    await t.win.fetch(`${apiBase}/fail`)
    await t.win.fetch(`${apiBase}/orders`)
    await t.win.fetch(`${apiBase}/api/ingestion/customEvent`, { method: 'POST', body: '{}' })
    await t.win.fetch(`${apiBase}/health/simple`)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/spans/batch').flatMap((r) => r.body.spans.map((s: any) => s.name))).toEqual(['GET /fail', 'GET /orders'])
    expect(t.service.to('/network').flatMap((r) => r.body.errors.map((e: any) => e.url))).toEqual([`${apiBase}/fail`])
  })

  test('a page clock stepped back while a request is out: the span ends where it began, the duration is 0', async () => {
    // A time sync may move Date.now() back; the service refuses a span that ends before it starts.
    const clock = fakeClock()
    let step = 0
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) }, { clock: { ...clock, now: () => clock.now() + step } })
    t.tracker.start()
    await settle()
    const request = t.win.fetch(`${apiBase}/fail`)
    step = -5000
    await request
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const [span] = t.service.to('/spans/batch').flatMap((r) => r.body.spans)
    expect(span.endTimeMs).toBe(span.startTimeMs)
    const [error] = t.service.to('/network').flatMap((r) => r.body.errors)
    expect(error).toMatchObject({ duration: 0, startTimeMs: span.startTimeMs, timestampMs: span.startTimeMs })
  })

  test('XMLHttpRequest too', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) })
    t.tracker.start()
    await settle()
    await xhrSend(t, 'GET', `${apiBase}/ok`)
    await xhrSend(t, 'get', `${apiBase}/fail`)
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/spans/batch').flatMap((r) => r.body.spans).map((s: any) => s.name)).toEqual(['GET /ok', 'GET /fail'])
    expect(t.service.to('/network').flatMap((r) => r.body.errors).map((e: any) => [e.url, e.status])).toEqual([[`${apiBase}/fail`, 500]])
  })

  test('an XMLHttpRequest object used again is reported once per request', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true }) })
    t.tracker.start()
    await settle()
    const xhr = new t.win.XMLHttpRequest()
    for (const path of ['/fail', '/fail?page=2', '/fail?page=3']) await xhrSend(t, 'GET', apiBase + path, xhr)
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/network').flatMap((r) => r.body.errors)).toHaveLength(3)
  })

  test('a send that throws (a second send) and an open while a request is under way leave no listener behind: each request is reported once', async () => {
    const t = await started(only({ spans: true }))
    const twice = new t.win.XMLHttpRequest()
    const ended = new Promise((resolve) => twice.addEventListener('loadend', resolve, { once: true }))
    twice.open('GET', `${apiBase}/ok?sent=twice`)
    twice.send()
    expect(() => twice.send()).toThrow()
    await ended
    const reopened = new t.win.XMLHttpRequest()
    reopened.open('GET', `${apiBase}/ok?opened=again`)
    reopened.send()
    await xhrSend(t, 'GET', `${apiBase}/fail`, reopened)
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    // (Browsers end the first request of `reopened` without an event; happy-dom lets it run and end
    // on the object, so which status the second one is reported with here is happy-dom's.)
    expect(t.service.to('/spans/batch').flatMap((r) => r.body.spans).map((s: any) => s.name)).toEqual(['GET /ok', 'GET /fail'])
  })

  test('a request the page aborts is no network error; its span says neither ok nor error (unset)', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) })
    t.tracker.start()
    await settle()
    // (Aborted before it starts: happy-dom's fetch does not abort a request under way.)
    const controller = new t.win.AbortController()
    controller.abort()
    expect(await t.win.fetch(`${apiBase}/ok`, { signal: controller.signal }).catch((error: Error) => error.name)).toBe('AbortError')
    const xhr = new t.win.XMLHttpRequest()
    const ended = xhrSend(t, 'GET', `${apiBase}/fail`, xhr)
    xhr.abort()
    await ended
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/spans/batch').flatMap((r) => r.body.spans).map((s: any) => [s.name, s.status])).toEqual([
      ['GET /ok', { code: 'unset' }],
      ['GET /fail', { code: 'unset' }],
    ])
    expect(t.service.to('/network')).toEqual([])
  })

  test('what the browser takes, a fetch of undefined or an open with a method of another type, throws nothing into the page', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true }) })
    // As a browser does: `fetch(undefined)` fetches ./undefined, which is not there.
    t.win.fetch = (async (input: unknown) => new Response(String(input), { status: 404 })) as typeof fetch
    t.tracker.start()
    await settle()
    let answer: Promise<Response> | undefined
    expect(() => (answer = t.win.fetch(undefined as never))).not.toThrow()
    expect((await answer!).status).toBe(404)
    expect(() => new t.win.XMLHttpRequest().open(undefined as never, `${apiBase}/ok`)).not.toThrow()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/network').flatMap((r) => r.body.errors).map((e: { method: string; url: string; status: number }) => [e.method, e.url, e.status])).toEqual([
      ['GET', 'http://shop.test/undefined', 404],
    ])
  })

  test('what fetch rejects, an input or method that cannot become text or an init whose getter throws, rejects as it does: the call throws nothing', async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) })
    // As a browser does: it reads the arguments inside the promise it returns, so what fails there rejects.
    t.win.fetch = (async (input: unknown, init?: RequestInit) => new Response(String(input) + String(init?.method))) as typeof fetch
    t.tracker.start()
    await settle()
    const textless = Object.create(null)
    const throwing = {
      get method(): string {
        throw new TypeError('no method')
      },
    }
    const calls = [() => t.win.fetch(textless), () => t.win.fetch(`${apiBase}/ok`, { method: textless }), () => t.win.fetch(`${apiBase}/ok`, throwing)]
    // (Not `expect(call).not.toThrow()`: Bun's awaits the promise the call returns, and takes its rejection for a throw.)
    const answers = calls.map((call) => {
      try {
        return call().then(() => 'resolved', (error: Error) => `rejected: ${error.name}`)
      } catch (error) {
        return `thrown: ${(error as Error).name}`
      }
    })
    expect(await Promise.all(answers)).toEqual(['rejected: TypeError', 'rejected: TypeError', 'rejected: TypeError'])
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/network')).toEqual([])
  })

  test("a failed request's message, which repeats its URL as the page gave it, loses the query and fragment too", async () => {
    const t = tracked({ automaticTrackingOptions: only({ network: true, spans: true }) })
    // As Chromium rejects a URL with credentials: "...: https://u:p@host/path?query" in its message.
    t.win.fetch = (async (input: unknown) => {
      throw new TypeError(`Failed to execute 'fetch' on 'Window': Request cannot be constructed from a URL that includes credentials: ${String(input)}`)
    }) as unknown as typeof fetch
    t.tracker.start()
    await settle()
    await t.win.fetch('https://u:p@api.shop.test/search?q=SECRET-QUERY#SECRET-FRAGMENT').catch(() => {})
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const [error] = t.service.to('/network').flatMap((r) => r.body.errors)
    expect(error.errorMessage).toBe("Failed to execute 'fetch' on 'Window': Request cannot be constructed from a URL that includes credentials: https://api.shop.test/search")
    const everything = t.service.sent.map((r) => r.text).join('\n')
    expect(everything).not.toContain('SECRET')
  })

  test('stop puts fetch and XMLHttpRequest back', async () => {
    const t = tracked()
    const { fetch } = t.win
    const { open, send } = t.win.XMLHttpRequest.prototype
    t.tracker.start()
    await settle()
    expect(t.win.fetch).not.toBe(fetch)
    t.tracker.stop()
    expect(t.win.fetch).toBe(fetch)
    expect(t.win.XMLHttpRequest.prototype.open).toBe(open)
    expect(t.win.XMLHttpRequest.prototype.send).toBe(send)
  })
})

describe('errors', () => {
  test('onerror and unhandledrejection become unhandled error reports with the release', async () => {
    const t = tracked({ release: 'web@2', automaticTrackingOptions: only({ errors: true }) })
    t.tracker.start()
    await settle()
    const thrown = new TypeError('x is not a function')
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: thrown, message: thrown.message, filename: 'http://shop.test/app.js', lineno: 3, colno: 7 }))
    const rejection = new t.win.Event('unhandledrejection') as Event & { reason?: unknown }
    rejection.reason = 'plain reason'
    t.win.dispatchEvent(rejection)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const reports = t.service.to('/errors').flatMap((r) => r.body.errors)
    expect(reports.map((r: any) => [r.name, r.message, r.handled, r.release, r.stack === thrown.stack, r.context])).toEqual([
      ['TypeError', 'x is not a function', false, 'web@2', true, { filename: 'http://shop.test/app.js', lineno: 3, colno: 7 }],
      ['Error', 'plain reason', false, 'web@2', false, { mechanism: 'unhandledrejection' }],
    ])
  })
})

describe('an error thrown again and again (a render or animation loop)', () => {
  const reported = (t: Tracked) => t.service.to('/errors').flatMap((r) => r.body.errors)
  const throwAt = (t: Tracked, error: Error) => t.win.dispatchEvent(new t.win.ErrorEvent('error', { error, message: error.message }))

  test(`the same report (name, message, stack) is sent once in ${ERROR_WINDOW_MS / 1000} s; the repeats are counted as dropped`, async () => {
    const t = await started(only({ errors: true }))
    const error = new TypeError('frame is undefined')
    for (let frame = 0; frame < 100; frame++) throwAt(t, error)
    t.tracker.captureError(new TypeError('frame is undefined'))
    t.tracker.captureError(new RangeError('frame is undefined'))
    await t.clock.advance(ERROR_WINDOW_MS - 1)
    throwAt(t, error)
    expect(reported(t).map((e: { name: string; handled: boolean }) => [e.name, e.handled])).toEqual([
      ['TypeError', false],
      // Thrown elsewhere (another stack), or another error.
      ['TypeError', true],
      ['RangeError', true],
    ])
    expect(t.tracker.getConnectionStatus().dropped).toEqual({ outbox: 0, error_flood: 100 })
    await t.clock.advance(1)
    throwAt(t, error)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(reported(t)).toHaveLength(4)
  })

  test(`at most ${ERRORS_PER_WINDOW} reports in ${ERROR_WINDOW_MS / 1000} s, whatever they are`, async () => {
    const t = await started(only({ errors: true }))
    for (let i = 0; i < ERRORS_PER_WINDOW + 5; i++) t.tracker.captureError(new Error(`item ${i} failed`))
    await t.clock.advance(ERROR_WINDOW_MS)
    t.tracker.captureError(new Error('later'))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const messages = reported(t).map((e: { message: string }) => e.message)
    expect(messages).toHaveLength(ERRORS_PER_WINDOW + 1)
    expect(messages.at(-1)).toBe('later')
    expect(t.tracker.getConnectionStatus().dropped.error_flood).toBe(5)
  })

  test(`a report is known by its first ${ERROR_KEY_CHARS} characters, all the window holds of it (not up to 96 KB each): two alike that far are one`, async () => {
    const t = await started(only({ errors: true }))
    const alike = 'x'.repeat(ERROR_KEY_CHARS)
    for (const end of ['a', 'b']) t.tracker.captureError(Object.assign(new Error(alike + end), { stack: 'at loop' }))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(reported(t)).toHaveLength(1)
    expect(t.tracker.getConnectionStatus().dropped.error_flood).toBe(1)
  })

  test('console.error lines flood the same way, counted apart from error reports', async () => {
    const t = tracked({ automaticTrackingOptions: only({ console: true, errors: true }) })
    t.win.console.error = () => {}
    t.tracker.start()
    await settle()
    const error = new TypeError('frame is undefined')
    for (let frame = 0; frame < 100; frame++) t.win.console.error('render failed:', error)
    t.tracker.captureError(error)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const errorLines = () => t.service.to('/logs').flatMap((r) => r.body.logs).filter((log: { level: string }) => log.level === 'error')
    expect(errorLines().filter((log: { message: string }) => log.message.startsWith('render failed'))).toHaveLength(1)
    expect(reported(t)).toHaveLength(1)
    for (let i = 0; i < ERRORS_PER_WINDOW + 5; i++) t.win.console.error(`item ${i} failed`)
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(errorLines()).toHaveLength(ERRORS_PER_WINDOW)
    expect(t.tracker.getConnectionStatus().dropped.error_flood).toBeGreaterThanOrEqual(99 + 5)
  })

  test('a message and a stack longer than the service keeps are cut where it would cut them', async () => {
    const t = await started(only({ errors: true }))
    const error = new Error('m'.repeat(ERROR_MESSAGE_MAX_CHARS + 10))
    error.stack = 's'.repeat(ERROR_STACK_MAX_CHARS + 10)
    t.tracker.captureError(error)
    t.tracker.captureError('a thrown string ' + 'x'.repeat(ERROR_MESSAGE_MAX_CHARS))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const [long, text] = reported(t)
    expect([long.message.length, long.stack.length, text.message.length]).toEqual([ERROR_MESSAGE_MAX_CHARS, ERROR_STACK_MAX_CHARS, ERROR_MESSAGE_MAX_CHARS])
    // Nothing the service would keep is cut: it keeps 32 KB of a message and 64 KB of a stack, in bytes.
    expect([ERROR_MESSAGE_MAX_CHARS, ERROR_STACK_MAX_CHARS]).toEqual([MESSAGE_LIMIT_BYTES, STACK_LIMIT_BYTES])
  })
})

describe('wrappers another script puts over ours', () => {
  test('after stop, ours reports nothing more; started again, every call is reported once', async () => {
    const t = tracked({ automaticTrackingOptions: only({ pageViews: true, console: true, network: true }) })
    t.win.console.warn = () => {}
    t.tracker.start()
    await settle()
    // Another script (an analytics or error tool) wraps the same functions after us.
    const { history, console } = t.win
    const xhr = t.win.XMLHttpRequest.prototype
    const wrapped: [Record<string, any>, string][] = [[history, 'pushState'], [console, 'warn'], [t.win, 'fetch'], [xhr, 'open'], [xhr, 'send']]
    for (const [owner, name] of wrapped) {
      const inner = owner[name]
      owner[name] = function (this: unknown, ...args: unknown[]) {
        return inner.apply(this, args)
      }
    }
    const use = async (path: string) => {
      history.pushState({}, '', path)
      console.warn(path)
      await t.win.fetch(`${apiBase}/fail`)
      await xhrSend(t, 'GET', `${apiBase}/fail`)
      await t.clock.advance(TELEMETRY_FLUSH_MS)
    }
    const reported = () => ({
      pageViews: customEvents(t).filter((e) => e.eventName === '$pageview').map((e) => e.eventProperties.path),
      // (happy-dom logs the failed requests with console.error.)
      logs: t.service.to('/logs').flatMap((r) => r.body.logs.filter((log: { level: string }) => log.level === 'warn').map((log: { message: string }) => log.message)),
      networkErrors: t.service.to('/network').flatMap((r) => r.body.errors).length,
    })
    t.tracker.stop()
    await use('/stopped')
    expect(reported()).toEqual({ pageViews: ['/'], logs: [], networkErrors: 0 })
    t.tracker.start()
    await settle()
    await use('/again')
    expect(reported()).toEqual({ pageViews: ['/', '/stopped', '/again'], logs: ['/again'], networkErrors: 2 })
  })
})

describe('what the page has locked', () => {
  test('history, console, fetch and XMLHttpRequest made read-only before start: start and stop throw nothing into the page, the rest is tracked', async () => {
    const t = tracked({ automaticTrackingOptions: only({ pageViews: true, navigation: true, clicks: true, console: true, network: true, errors: true }) })
    const { win } = t
    Object.freeze(win.history)
    Object.freeze(win.console)
    Object.defineProperty(win, 'fetch', { value: win.fetch, writable: false })
    Object.freeze(win.XMLHttpRequest.prototype)
    expect(() => t.tracker.start()).not.toThrow()
    await settle()
    win.history.pushState({}, '', '/locked')
    win.dispatchEvent(new win.PopStateEvent('popstate'))
    win.document.body.dispatchEvent(new win.MouseEvent('click', { bubbles: true }))
    win.dispatchEvent(new win.ErrorEvent('error', { message: 'still reported', error: new Error('still reported') }))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(customEvents(t).map((e) => e.eventName)).toEqual(['$pageview', '$navigation', '$pageview', '$click'])
    expect(t.service.to('/errors').flatMap((r) => r.body.errors.map((e: { message: string }) => e.message))).toEqual(['still reported'])
    expect(() => t.tracker.stop()).not.toThrow()
  })

  test('history and fetch frozen while the tracker runs: stop cannot put them back, and throws nothing', async () => {
    const t = tracked()
    t.tracker.start()
    await settle()
    Object.freeze(t.win.history)
    Object.defineProperty(t.win, 'fetch', { value: t.win.fetch, writable: false })
    expect(() => t.tracker.stop()).not.toThrow()
  })
})

describe('what is not an error of the code', () => {
  test('a resource that fails to load (an image, a script), or an error event with neither message nor error: nothing is reported', async () => {
    const t = await started(only({ errors: true }), '<img id="logo" src="/missing.png">')
    t.win.document.getElementById('logo')!.dispatchEvent(new t.win.Event('error'))
    t.win.dispatchEvent(new t.win.Event('error'))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/errors')).toEqual([])
  })
})

describe('a module start() loads', () => {
  test('what the page throws while automatic tracking loads is reported once it is there, each error once', async () => {
    const t = tracked({ automaticTrackingOptions: only({ errors: true }) })
    t.tracker.start()
    // Before the module is there: start() has only asked for it.
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: new Error('during load'), message: 'during load' }))
    const rejection = new t.win.Event('unhandledrejection') as Event & { reason?: unknown }
    rejection.reason = 'rejected during load'
    t.win.dispatchEvent(rejection)
    await settle()
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: new Error('after load'), message: 'after load' }))
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const reports = t.service.to('/errors').flatMap((r) => r.body.errors)
    expect(reports.map((r: { message: string }) => r.message)).toEqual(['during load', 'rejected during load', 'after load'])
  })

  test('what it keeps meanwhile is bounded, should the module be long in coming or never come: the first 50', async () => {
    const t = tracked({ automaticTrackingOptions: only({ errors: true }) })
    t.tracker.start()
    for (let i = 0; i < 80; i++) t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: new Error(`early ${i}`), message: `early ${i}` }))
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    const reports = t.service.to('/errors').flatMap((r) => r.body.errors)
    // Those kept go as any burst of errors does: the first of a window, the rest counted as a flood.
    expect(reports.map((r: { message: string }) => r.message)).toEqual(Array.from({ length: ERRORS_PER_WINDOW }, (_, i) => `early ${i}`))
    expect(t.tracker.getConnectionStatus().dropped.error_flood).toBe(50 - ERRORS_PER_WINDOW)
  })

  test('stopped before it loaded: nothing is installed, and nothing kept meanwhile is reported', async () => {
    const t = tracked()
    const { fetch, history } = t.win
    const pushState = history.pushState
    t.tracker.start()
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: new Error('before stop'), message: 'before stop' }))
    t.tracker.stop()
    await settle()
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { error: new Error('after stop'), message: 'after stop' }))
    t.win.document.body.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    t.win.history.pushState({}, '', '/x')
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.win.fetch).toBe(fetch)
    expect(t.win.history.pushState).toBe(pushState)
    expect(t.service.to('/errors')).toEqual([])
    expect(t.service.to('/customEvent/batch')).toEqual([])
  })
})

describe('switches', () => {
  test('enableAutomaticTracking: false installs nothing', async () => {
    const t = tracked({ enableAutomaticTracking: false })
    const { fetch } = t.win
    t.tracker.start()
    await settle()
    t.win.document.body.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    t.win.history.pushState({}, '', '/x')
    await t.clock.advance(1000)
    expect(t.win.fetch).toBe(fetch)
    expect(t.service.to('/customEvent/batch')).toEqual([])
  })

  test('each kind is switched off on its own; the default is all on', async () => {
    const t = tracked({ automaticTrackingOptions: { clicks: false, console: false } })
    t.tracker.start()
    await settle()
    t.win.document.body.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    t.win.console.warn = () => {}
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(customEvents(t).map((e) => e.eventName)).toEqual(['$pageview'])
    expect(t.service.to('/logs')).toEqual([])
  })
})
