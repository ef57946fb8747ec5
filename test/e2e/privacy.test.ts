import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { decodeHanded, storedTextContaining } from './delivery'
import { e2eSuite } from './suite'

/**
 * What the tracker sends besides the replay's text, in a real browser: the URLs it reports (the
 * browser's own referrer rules, its error messages naming a request's URL) and what a page's
 * framework keeps on its elements (Chromium serializes an element's own properties; a form's named
 * fields shadow the form's properties). Every secret is a word ending in -SECRET.
 */

const suite = e2eSuite()
const open = closedAfterEach()
const SECRET = /[A-Z]+-SECRET/g

/** A password-reset page of the site, linking to the page that is tracked. */
const RESET = `<!doctype html><html><body><a id="go" href="/welcome#access_token=OAUTH-SECRET&token_type=bearer">Continue</a></body></html>`

/**
 * The tracked page: an OAuth callback (implicit flow: the token in the fragment), with a form whose
 * field is named `id` and holds its value the way Vue keeps it on the element (`_value`).
 */
const WELCOME = (key: string, core: string) => `<!doctype html><html><head><title>Welcome</title>
<script src="/t.js"></script>
<script>
  window.tracker = ServiceTracker.init(${JSON.stringify(key)}, { ingestionUrl: ${JSON.stringify(core)}, logLevel: 'none' })
  window.tracker.start()
</script></head><body>
  <form id="profile" onsubmit="event.preventDefault()"><input name="id" value=""><button>Save</button></form>
  <script>document.querySelector('[name=id]')._value = 'VUE-SECRET'</script>
</body></html>`

function serve(key: string, core: string) {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const { pathname } = new URL(request.url)
      if (pathname === '/t.js') return new Response(Bun.file(suite.script), { headers: { 'content-type': 'text/javascript' } })
      const html = pathname === '/welcome' ? WELCOME(key, core) : pathname === '/reset' ? RESET : ''
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, close: () => void server.stop(true) }
}

describe('what automatic tracking sends, in headless Chromium', () => {
  test('no credential from URLs, referrers or request errors, and no value kept on an element, in any payload or stored row', async () => {
    const site = open(serve(suite.e2e.core.key, suite.e2e.base))
    const browser = open(await openBrowser())
    const { page } = browser
    // Reached from the reset page by a link: Chromium's referrer for a same-origin page is its full URL.
    await page.goto(`${site.url}/reset?token=RESET-SECRET`)
    await page.click('#go')
    await page.waitForFunction(() => 'tracker' in window)
    await page.evaluate(async () => {
      // Chromium refuses a URL with credentials and names it, as given, in its message.
      await fetch('http://jane:FETCH-SECRET@127.0.0.1:1/orders?token=QUERY-SECRET').catch(() => {})
      await fetch('data:text/plain,DATA-SECRET')
      console.error('invalid field', document.querySelector('[name=id]'))
    })
    await page.click('#profile button')
    await page.goto('about:blank')

    const bodies = (await browser.handed(site.url)).map(decodeHanded)
    expect([...new Set(bodies.map((body) => body.text).join('\n').match(SECRET))]).toEqual([])
    const events = bodies.filter((b) => b.path === '/customEvent/batch').flatMap((b) => b.body.events)
    const entry = `${site.url}/welcome#access_token=[redacted]&token_type=[redacted]`
    const referrer = `${site.url}/reset?token=[redacted]`
    expect(events.find((e: { eventName: string }) => e.eventName === '$pageview').eventProperties).toMatchObject({ url: entry, referrer })
    // The form by its id attribute; Chromium's `form.id` is the field named `id`.
    expect(events.find((e: { eventName: string }) => e.eventName === '$form_submit').eventProperties).toMatchObject({ id: 'profile' })
    expect(events.find((e: { eventName: string }) => e.eventName === '$click').eventProperties.selector).toBe('form#profile > button')
    const logs = bodies.filter((b) => b.path === '/logs').flatMap((b) => b.body.logs)
    expect(logs.map((log: { message: string }) => log.message)).toContain('invalid field "INPUT"')
    const network = bodies.filter((b) => b.path === '/network').flatMap((b) => b.body.errors)
    expect(network.map((e: { url: string; errorMessage: string }) => [e.url, e.errorMessage])).toEqual([
      ['http://127.0.0.1:1/orders', "Failed to execute 'fetch' on 'Window': Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:1/orders?token=[redacted]"],
    ])

    const [sessionId] = new Set(bodies.map((b) => b.body.sessionId))
    await eventually(async () =>
      expect(await suite.e2e.rows(sql`select entry_url, referrer from sessions where session_id = ${sessionId}`)).toEqual([{ entry_url: entry, referrer }]),
    )
    expect(await storedTextContaining(suite.e2e, ['-secret'])).toEqual([])
  })
})
