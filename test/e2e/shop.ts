import { bunRelay } from '@sightline/relay/adapters/bun'
import { socketClient } from '@sightline/relay/upstream/socket'
import type { UpstreamClient } from '@sightline/relay'

/**
 * A small demo shop, served by Bun on loopback, the way an operator's site would mount Sightline:
 * the relay under /_sl (the tracker's script included) and everything else the shop's own pages,
 * script and API. Pages switch client-side (pushState) on `data-spa` links and load in full on the
 * others. Every request the shop receives, and every request the relay makes to core, is counted.
 */

export type TrackerSetup =
  /** First-party through the relay: `<script src="/_sl/t.js" data-api-key>`, nothing else. */
  | { via: 'relay' }
  /** Sending to core's own origin: the script from the shop's static files, `ingestionUrl` set. */
  | { via: 'direct'; ingestionUrl: string }
  /** The relay on another origin than the page (say www. and app. of one site): cross-origin. */
  | { via: 'cross-origin relay'; relayOrigin: string }

export interface ShopOptions {
  key: string
  /** Core's base URL, the relay's upstream. */
  core: string
  /** The tracker's browser bundle (`tracker/dist/t.js`). */
  script: string
  tracker: TrackerSetup
  /** A slow network between the pages and the service: each request to the relay's API waits this long first. */
  latencyMs?: number
}

/** One request as the shop (or the relay's upstream side) saw it. */
export interface Hit {
  method: string
  path: string
  /** Request headers the proof needs: `content-type`, `sec-fetch-mode`, `authorization` (present or not). */
  contentType: string | null
  fetchMode: string | null
  authorized: boolean
  status?: number
}

export interface Shop {
  url: string
  /** Requests that reached the shop's server, in order (pages, script, relay), with the answer's status. */
  hits: Hit[]
  /** Requests the relay sent on to core, with core's answer status. */
  upstream: Hit[]
  /** Requests under /_sl, the relay's part of `hits`. */
  relayed(): Hit[]
  close(): void
}

const PRODUCTS: Record<string, { name: string; price: number }> = {
  'wool-socks': { name: 'Wool socks', price: 12 },
  'rain-hat': { name: 'Rain hat', price: 30 },
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function trackerTag(setup: TrackerSetup, key: string): string {
  const k = escapeHtml(key)
  switch (setup.via) {
    case 'relay':
      return `<script async id="sightline" src="/_sl/t.js" data-api-key="${k}"></script>`
    case 'direct':
      return `<script async id="sightline" src="/vendor/sightline.js" data-key="${k}" data-ingestion-url="${escapeHtml(setup.ingestionUrl)}"
        onload="ServiceTracker.init(this.dataset.key, { ingestionUrl: this.dataset.ingestionUrl }).start(); this.dataset.started = 'yes'"></script>`
    case 'cross-origin relay':
      return `<script async id="sightline" src="${escapeHtml(setup.relayOrigin)}/_sl/t.js" data-api-key="${k}"></script>`
  }
}

const page = (title: string, tag: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${escapeHtml(title)} · Sock Shop</title>
  ${tag}
  <script defer src="/app.js"></script>
</head>
<body>
  <nav>
    <a href="/" data-spa>Home</a>
    <a href="/products/wool-socks" data-spa>Wool socks</a>
    <a href="/products/rain-hat" data-spa>Rain hat</a>
    <a href="/cart">Cart</a>
    <a href="/checkout">Checkout</a>
  </nav>
  <main id="view"></main>
</body>
</html>`

/**
 * The shop's own front-end: a router for the `data-spa` links, an "add to cart" that tracks an event,
 * a coupon button whose handler throws (an uncaught error), a checkout whose order button tracks an
 * event, calls the shop's API and logs the payment widget's console error.
 * `window.shop.tracker()` resolves with the started tracker (the tests wait on it).
 */
const APP = `
const PRODUCTS = ${JSON.stringify(PRODUCTS)}
const tag = document.getElementById('sightline')
// With data-api-key the tracker starts as its script runs; otherwise its onload starts it.
const started = () => (tag.dataset.apiKey ? !!window.ServiceTracker : tag.dataset.started === 'yes')
const ready = new Promise((resolve) => (started() ? resolve() : tag.addEventListener('load', () => resolve())))
const sightline = () => ready.then(() => ServiceTracker.init(tag.dataset.apiKey || tag.dataset.key))
window.shop = { tracker: sightline }
const track = (name, properties) => sightline().then((t) => t.customEvent(name, properties))
const view = document.getElementById('view')

function render() {
  const path = location.pathname
  const product = PRODUCTS[path.replace('/products/', '')]
  if (product) {
    document.title = product.name + ' · Sock Shop'
    view.innerHTML = '<h1>' + product.name + '</h1><p>' + product.price + ' EUR</p><button id="add">Add to cart</button>'
    document.getElementById('add').onclick = () => track('add_to_cart', { sku: path.slice(10), price: product.price })
  } else if (path === '/cart') {
    view.innerHTML = '<h1>Your cart</h1><p>1 × Wool socks</p><button id="coupon">Apply coupon</button>'
    document.getElementById('coupon').onclick = () => { throw new TypeError('coupon service returned no discount') }
  } else if (path === '/checkout') {
    view.innerHTML = '<h1>Checkout</h1><label>Gift note <input id="gift-note" name="note" autocomplete="off"></label><button id="order">Place order</button>'
    document.getElementById('order').onclick = async () => {
      track('order_placed', { items: 1, total: 12 })
      await fetch('/api/stock?sku=wool-socks').then((r) => r.json())
      console.error('payment widget failed to load: timeout after 3000 ms')
      document.getElementById('order').textContent = 'Ordered'
    }
  } else {
    document.title = 'Home · Sock Shop'
    view.innerHTML = '<h1>Sock Shop</h1><p>Warm feet, all year.</p>'
  }
}

document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-spa]')
  if (!link) return
  event.preventDefault()
  history.pushState({}, '', link.href)
  render()
})
addEventListener('popstate', render)
render()
`

/** What the proofs need of a request's headers; the rest is not kept. */
const hitOf = (method: string, path: string, headers: { get(name: string): string | null }): Hit => ({
  method,
  path,
  contentType: headers.get('content-type'),
  fetchMode: headers.get('sec-fetch-mode'),
  authorized: headers.get('authorization') !== null,
})

/** The relay's upstream client, counting what it sends to core and what core answers. */
function countingClient(upstream: Hit[]): UpstreamClient {
  const client = socketClient()
  return async (request) => {
    const headers = new Map(request.headers.map(([name, value]) => [name.toLowerCase(), value]))
    const hit = hitOf(request.method, request.target.split('?')[0], { get: (name) => headers.get(name) ?? null })
    upstream.push(hit)
    const answer = await client(request)
    hit.status = answer.status
    return answer
  }
}

export function startShop({ key, core, script, tracker, latencyMs = 0 }: ShopOptions): Shop {
  const hits: Hit[] = []
  const upstream: Hit[] = []
  const relay = bunRelay({ upstream: core, prefix: '/_sl', script: { path: script }, client: countingClient(upstream) })
  const scriptFile = Bun.file(script)
  const html = (title: string) => new Response(page(title, trackerTag(tracker, key)), { headers: { 'content-type': 'text/html; charset=utf-8' } })

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request, srv) {
      const { pathname } = new URL(request.url)
      const hit = hitOf(request.method, pathname, request.headers)
      hits.push(hit)
      const response = await route(request, pathname, srv)
      hit.status = response.status
      return response
    },
  })

  async function route(request: Request, pathname: string, srv: typeof server): Promise<Response> {
    if (relay.handles(pathname)) {
      if (latencyMs && pathname.startsWith('/_sl/api/')) await Bun.sleep(latencyMs)
      return relay(request, srv)
    }
    if (pathname === '/app.js') return new Response(APP, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
    if (pathname === '/vendor/sightline.js') return new Response(scriptFile, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
    if (pathname === '/api/stock') return Response.json({ sku: 'wool-socks', inStock: 41 })
    if (pathname === '/favicon.ico') return new Response(null, { status: 204 })
    if (pathname === '/' || pathname === '/cart' || pathname === '/checkout' || pathname.startsWith('/products/')) return html(pathname)
    return new Response('not found', { status: 404 })
  }

  return {
    url: `http://127.0.0.1:${server.port}`,
    hits,
    upstream,
    relayed: () => hits.filter((hit) => hit.path.startsWith('/_sl/')),
    close: () => void server.stop(true),
  }
}
