import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { bunRelay } from '@sightline/relay/adapters/bun'
import { TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { e2eSuite } from './suite'

/**
 * A page that makes the tracker's life hard, in headless Chromium: a strict Content-Security-Policy
 * (connect-src limited to the site's own origin, as a relay deployment allows), and page code that,
 * after the tracker has started, replaces `fetch` and `XMLHttpRequest.prototype.send` with wrappers of
 * its own, wraps `history.pushState` and then freezes `history`.
 */

const suite = e2eSuite()
const open = closedAfterEach()

const CSP = "default-src 'self'; connect-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'"

/** The page's own code, run after the tracker has started (it is a classic script after the tracker's). */
const PAGE = `
window.violations = []
document.addEventListener('securitypolicyviolation', (event) => window.violations.push(event.blockedURI + ' ' + event.violatedDirective))
window.seen = []
const fetch = window.fetch
window.fetch = function (input, init) {
  window.seen.push('fetch ' + (input instanceof Request ? input.url : String(input)))
  return fetch.call(this, input, init)
}
const send = XMLHttpRequest.prototype.send
XMLHttpRequest.prototype.send = function (body) {
  window.seen.push('xhr')
  return send.call(this, body)
}
const pushState = history.pushState
history.pushState = function (...args) {
  window.seen.push('pushState')
  return pushState.apply(this, args)
}
Object.freeze(history)
window.app = {
  tracker: () => ServiceTracker.init(document.getElementById('sightline').dataset.apiKey),
  async work() {
    await window.fetch('/api/missing')
    await new Promise((resolve) => {
      const xhr = new XMLHttpRequest()
      xhr.open('GET', '/api/ok')
      xhr.onloadend = resolve
      xhr.send()
    })
    history.pushState({}, '', '/settings')
  },
}
`

function hostileSite(key: string, core: string, script: string) {
  const relay = bunRelay({ upstream: core, prefix: '/_sl', script: { path: script } })
  const html = `<!doctype html><html><head><title>Settings</title>
    <script id="sightline" src="/_sl/t.js" data-api-key="${key}"></script>
    <script src="/page.js"></script>
    </head><body><h1>Settings</h1></body></html>`
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request, srv) {
      const { pathname } = new URL(request.url)
      if (relay.handles(pathname)) return relay(request, srv)
      if (pathname === '/page.js') return new Response(PAGE, { headers: { 'content-type': 'text/javascript' } })
      if (pathname === '/api/ok') return Response.json({ ok: true })
      if (pathname === '/' || pathname === '/settings') return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP } })
      return new Response('not found', { status: 404 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) }
}

interface HostilePage {
  violations: string[]
  seen: string[]
  app: { tracker(): { getSessionId(): string; getConnectionStatus(): { queued: number; recommendations: string[] } }; work(): Promise<void> }
}

describe('a hostile page, in headless Chromium', () => {
  test("strict CSP, fetch and XMLHttpRequest replaced and history frozen after the tracker started: its sends go through the relay, only the page's own requests are reported", async () => {
    const site = open(hostileSite(suite.e2e.core.key, suite.e2e.base, suite.script))
    const { page } = open(await openBrowser())
    await page.clock.install()
    await page.goto(`${site.url}/`)
    const sessionId = await page.evaluate(() => (window as unknown as HostilePage).app.tracker().getSessionId())
    await page.evaluate(() => (window as unknown as HostilePage).app.work())
    await page.clock.fastForward(TELEMETRY_FLUSH_MS)

    await eventually(async () => {
      const events = await suite.e2e.rows<{ event_name: string; path: string }>(sql`select event_name, properties->>'path' as path from events where session_id = ${sessionId} and event_name = '$pageview' order by timestamp`)
      expect(events.map((e) => e.path)).toEqual(['/', '/settings'])
      const failed = await suite.e2e.rows<{ url: string; status: number }>(sql`select url, status from network_errors where session_id = ${sessionId}`)
      expect(failed).toEqual([{ url: `${site.url}/api/missing`, status: 404 }])
      const spans = await suite.e2e.rows<{ name: string }>(sql`select name from spans where session_id = ${sessionId} order by name`)
      expect(spans.map((s) => s.name)).toEqual(['GET /api/missing', 'GET /api/ok'])
      expect(await suite.e2e.rows(sql`select 1 from replay_chunks where session_id = ${sessionId}`)).not.toEqual([])
    })
    const state = await page.evaluate(() => {
      const hostile = window as unknown as HostilePage
      return { violations: hostile.violations, seen: hostile.seen, status: hostile.app.tracker().getConnectionStatus() }
    })
    expect(state.violations).toEqual([])
    // The page's wrappers saw its own requests only: the tracker sends with the fetch it found at load.
    expect(state.seen).toEqual(['fetch /api/missing', 'xhr', 'pushState'])
    expect(state.status).toMatchObject({ queued: 0, recommendations: [] })

    // Leaving: the goodbye beacon goes under the same policy.
    await page.goto('about:blank')
    await eventually(async () => {
      const [session] = await suite.e2e.rows<{ ended_at: unknown }>(sql`select ended_at from sessions where session_id = ${sessionId}`)
      expect(session.ended_at).not.toBeNull()
    })
  })
})
