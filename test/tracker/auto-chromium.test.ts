import { describe, expect, test } from 'bun:test'
import { chromiumSite, startTracker } from './helpers/chromium'

/** Automatic tracking in headless Chromium, with t.js as built: what a real browser does that happy-dom does not. */

const pageOf = (head = '') => `<!doctype html><html><head><title>Shop</title>${head}</head><body><script src="/t.js"></script></body></html>`
let pages: Record<string, string> = {}

const chromium = chromiumSite(async (_, url) => {
  if (url.pathname.includes('/api/')) {
    await Bun.sleep(Number(url.searchParams.get('wait') ?? 0))
    return new Response('ok', { status: url.pathname.endsWith('/fail') ? 500 : 200 })
  }
  return new Response(pages[url.pathname] ?? pageOf(), { headers: { 'content-type': 'text/html' } })
})
/** Every ingestion body the site received, by path. */
const received = chromium.sends

/** Opens `path`, starts the tracker with `options` and waits for automatic tracking to be there. */
async function open(path: string, options: Record<string, unknown>) {
  received.length = 0
  await chromium.browser.page.goto(`http://127.0.0.1:${chromium.site.port}${path}`)
  await startTracker(chromium.browser.page, 'sl_dev_auto', options)
  await chromium.browser.page.waitForTimeout(200)
}
const flushed = async () => {
  await chromium.browser.page.waitForTimeout(1300)
}
const items = (path: string, field: string) => received.filter((r) => r.path === path).flatMap((r) => r.body[field] ?? [r.body])

const spans = () => items('/spans/batch', 'spans').map((s: any) => [s.name, s.status.code, s.attributes['http.status_code']])
const networkErrors = () => items('/network', 'errors').map((e: any) => [e.method, e.url, e.status, e.errorType])

describe('network tracking in Chromium', () => {
  test('an XMLHttpRequest the page sends again from its own load handler (a retry): each request is reported as it ended', async () => {
    await open('/', { automaticTrackingOptions: { network: true, spans: true } })
    // Chromium fires the first request's loadend after the retry is sent, while the object is OPENED again.
    await chromium.browser.page.evaluate(
      () =>
        new Promise<void>((resolve) => {
          const xhr = new XMLHttpRequest()
          let retries = 1
          xhr.addEventListener('load', () => {
            if (xhr.status >= 500 && retries--) {
              xhr.open('GET', '/api/ok?retry')
              xhr.send()
            } else resolve()
          })
          xhr.open('GET', '/api/fail?first')
          xhr.send()
        }),
    )
    await flushed()
    expect(spans()).toEqual([
      ['GET /api/fail', 'error', 500],
      ['GET /api/ok', 'ok', 200],
    ])
    expect(networkErrors()).toEqual([['GET', `http://127.0.0.1:${chromium.site.port}/api/fail`, 500, 'http']])
  })

  test('a fetch the page aborts with a reason of its own (abort("superseded"), a library\'s cancel) is no network error', async () => {
    await open('/', { automaticTrackingOptions: { network: true, spans: true } })
    const rejected = await chromium.browser.page.evaluate(async () => {
      const controller = new AbortController()
      const request = new Request('/api/ok?wait=500', { signal: controller.signal })
      const answers = [fetch('/api/ok?wait=500', { signal: controller.signal }), fetch(request)].map((answer) => answer.catch((reason) => reason))
      controller.abort('superseded')
      // An XMLHttpRequest aborted, and a fetch that timed out (AbortSignal.timeout): the latter failed.
      const xhr = new XMLHttpRequest()
      xhr.open('GET', '/api/ok?wait=500')
      xhr.send()
      xhr.abort()
      const timedOut = await fetch('/api/fail?wait=500', { signal: AbortSignal.timeout(50) }).catch((reason) => reason.name)
      return [...(await Promise.all(answers)), timedOut]
    })
    expect(rejected).toEqual(['superseded', 'superseded', 'TimeoutError'])
    await flushed()
    expect(spans()).toEqual([
      ['GET /api/ok', 'unset', null],
      ['GET /api/ok', 'unset', null],
      ['GET /api/ok', 'unset', null],
      ['GET /api/fail', 'error', null],
    ])
    expect(networkErrors()).toEqual([['GET', `http://127.0.0.1:${chromium.site.port}/api/fail`, null, 'network']])
  })

  test('a fetch with an empty method, which the browser rejects, is reported with its default method, which core takes', async () => {
    await open('/', { automaticTrackingOptions: { network: true, spans: false } })
    const rejected = await chromium.browser.page.evaluate(() => fetch('/api/ok', { method: '' }).then(() => 'sent', (reason) => reason.name))
    expect(rejected).toBe('TypeError')
    await flushed()
    expect(networkErrors()).toEqual([['GET', `http://127.0.0.1:${chromium.site.port}/api/ok`, null, 'network']])
  })

  test('fetch() with no argument rejects as the browser\'s does: the wrapper adds none (fetch(undefined) would fetch ./undefined)', async () => {
    await open('/', { automaticTrackingOptions: { network: true, spans: true } })
    const outcome = await chromium.browser.page.evaluate(() => (fetch as unknown as () => Promise<Response>)().then(() => 'sent', (reason) => reason.name))
    expect(outcome).toBe('TypeError')
    // What it reports of the failed call goes now, not into the next test's.
    await flushed()
  })

  test('a synchronous XMLHttpRequest that fails on the network (send throws, no loadend) is a network error', async () => {
    await open('/', { automaticTrackingOptions: { network: true, spans: true } })
    const thrown = await chromium.browser.page.evaluate(() => {
      const failing = new XMLHttpRequest()
      failing.open('GET', 'http://127.0.0.1:1/refused', false)
      let name = ''
      try {
        failing.send()
      } catch (error) {
        name = (error as Error).name
      }
      const ok = new XMLHttpRequest()
      ok.open('GET', '/api/ok?sync', false)
      ok.send()
      return name
    })
    expect(thrown).toBe('NetworkError')
    await flushed()
    expect(spans()).toEqual([
      ['GET /refused', 'error', null],
      ['GET /api/ok', 'ok', 200],
    ])
    expect(networkErrors()).toEqual([['GET', 'http://127.0.0.1:1/refused', null, 'network']])
  })

  test('a page with <base href>: a relative request, link or form action is reported where the browser sends it', async () => {
    pages['/app/products/42'] = pageOf('<base href="/shop/">')
    await open('/app/products/42', { automaticTrackingOptions: { network: true, spans: true, clicks: true, forms: true } })
    await chromium.browser.page.evaluate(async () => {
      document.body.insertAdjacentHTML('beforeend', '<a id="next" href="cart?step=2">Cart</a><form id="f" action="pay?x=1"></form>')
      document.getElementById('f')!.addEventListener('submit', (event) => event.preventDefault())
      await fetch('api/fail')
      await new Promise((resolve) => {
        const xhr = new XMLHttpRequest()
        xhr.open('GET', 'api/fail?xhr')
        xhr.addEventListener('loadend', resolve)
        xhr.send()
      })
      document.getElementById('next')!.addEventListener('click', (event) => event.preventDefault())
      document.getElementById('next')!.click()
      ;(document.getElementById('f') as HTMLFormElement).requestSubmit()
    })
    await flushed()
    const base = `http://127.0.0.1:${chromium.site.port}/shop/`
    expect(networkErrors()).toEqual([
      ['GET', base + 'api/fail', 500, 'http'],
      ['GET', base + 'api/fail', 500, 'http'],
    ])
    const events = items('/customEvent/batch', 'events')
    expect(events.find((e: any) => e.eventName === '$click').eventProperties.href).toBe(base + 'cart')
    expect(events.find((e: any) => e.eventName === '$form_submit').eventProperties.action).toBe(base + 'pay')
  })
})

describe('page views in Chromium', () => {
  test("a router on the Navigation API (navigation.navigate(), intercepted) is followed like one on history's: each change of URL once", async () => {
    await open('/home', { automaticTrackingOptions: { pageViews: true, navigation: true } })
    await chromium.browser.page.evaluate(async () => {
      const { navigation } = window as any
      // What such a router does: it takes the navigation over and renders the new page itself.
      navigation.addEventListener('navigate', (event: any) => event.canIntercept && event.intercept({ handler: async () => {} }))
      await navigation.navigate('/products').finished
      await navigation.navigate('/products?sort=price', { history: 'replace' }).finished
      // History's methods, a hash changed (a push, the browser says) and a back: each once, not also as the Navigation API's.
      history.pushState({}, '', '/cart')
      history.replaceState({}, '', '/cart')
      location.hash = 'top'
      const popped = new Promise((resolve) => addEventListener('popstate', resolve, { once: true }))
      history.back()
      await popped
    })
    await flushed()
    const port = chromium.site.port
    const events = items('/customEvent/batch', 'events').map((e: any) => [e.eventName, e.eventProperties.type ?? e.eventProperties.path, e.eventProperties.to ?? e.eventProperties.url])
    expect(events.map(([name, what, url]: string[]) => [name, what, url.replace(`http://127.0.0.1:${port}`, '')])).toEqual([
      ['$pageview', '/home', '/home'],
      ['$navigation', 'push', '/products'],
      ['$pageview', '/products', '/products'],
      ['$navigation', 'replace', '/products?sort=[redacted]'],
      ['$navigation', 'push', '/cart'],
      ['$pageview', '/cart', '/cart'],
      ['$navigation', 'push', '/cart#top'],
      ['$pageview', '/cart', '/cart#top'],
      ['$navigation', 'pop', '/cart'],
      ['$pageview', '/cart', '/cart'],
    ])
  })
})

describe('clicks in Chromium', () => {
  test("a click inside a component's open shadow root is the element clicked there, its selector going on from the component; a redact selector on the component still masks its text", async () => {
    pages['/components'] = `<!doctype html><html><head><title>Shop</title></head><body style="margin:0">
      <shop-cart id="cart"></shop-cart><shop-cart id="secret" class="private"></shop-cart>
      <script>for (const host of document.querySelectorAll('shop-cart')) host.attachShadow({ mode: 'open' }).innerHTML = '<button class="pay">Pay <b>now</b></button>'</script>
      <script src="/t.js"></script></body></html>`
    await open('/components', { redactionStrategy: { mode: 'visibility-first', redactSelectors: ['.private'] }, automaticTrackingOptions: { clicks: true } })
    await chromium.browser.page.locator('#cart button').click()
    await chromium.browser.page.locator('#secret button b').click()
    await flushed()
    const clicks = items('/customEvent/batch', 'events').filter((e: any) => e.eventName === '$click').map((e: any) => e.eventProperties)
    expect(clicks).toEqual([
      { tag: 'button', selector: 'shop-cart#cart > button.pay', text: 'Pay now' },
      { tag: 'button', selector: 'shop-cart#secret.private > button.pay' },
    ])
  })


  test("visibility-first: a click's text is what the page shows, never an inline script's data (which the replay never records either)", async () => {
    // A short page: a click below its body lands on the <html> element, whose textContent begins with the
    // head's scripts; an app's state, embedded in the body for hydration, is in the body's.
    pages['/account'] = `<!doctype html><html><head><title>Account</title><script>window.__USER__ = { email: 'SCRIPT-SECRET@x.test' }</script></head>
      <body style="margin:0"><div id="app" style="height:40px">Your account</div><script type="application/json">{"card":"JSON-SECRET"}</script><script src="/t.js"></script></body></html>`
    await open('/account', { redactionStrategy: { mode: 'visibility-first' }, automaticTrackingOptions: { clicks: true } })
    await chromium.browser.page.mouse.click(10, 300)
    await chromium.browser.page.evaluate(() => document.body.click())
    await chromium.browser.page.click('#app')
    await flushed()
    const clicks = items('/customEvent/batch', 'events').filter((e: any) => e.eventName === '$click').map((e: any) => [e.eventProperties.tag, e.eventProperties.text])
    expect(clicks).toEqual([
      ['html', 'Your account'],
      ['body', 'Your account'],
      ['div', 'Your account'],
    ])
  })
})
