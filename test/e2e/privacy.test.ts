import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { RedactionStrategy } from '@sightline/tracker'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { coreRequests, decodeHanded, missing, perKind, produced, stored, storedTextContaining } from './delivery'
import { e2eSuite } from './suite'

/**
 * What the tracker sends besides the replay's text, in a real browser: the URLs it reports (the
 * browser's own referrer rules, its error messages naming a request's URL) and what a page's
 * framework keeps on its elements (Chromium serializes an element's own properties; a form's named
 * fields shadow the form's properties); and the URLs in the replay, as Chromium serializes a page's
 * markup and its style sheets. Every secret is a word ending in -SECRET.
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

/**
 * A tracked page full of URLs with credentials and addresses in its markup: where links and forms
 * lead, what it loads (a signed image and its candidates, a poster, a frame of another origin, a style
 * sheet and the images styles name), next to an ordinary image. `widget` is that other origin.
 */
const GALLERY = (key: string, core: string, strategy: RedactionStrategy, widget: string) => `<!doctype html><html><head><title>Gallery</title>
<link rel="stylesheet" href="/site.css?token=LINK-SECRET">
<style>.hero { background: url("/hero.jpg?sig=SHEET-SECRET&w=800") }</style>
<script src="/t.js"></script>
<script>
  window.tracker = ServiceTracker.init(${JSON.stringify(key)}, { ingestionUrl: ${JSON.stringify(core)}, logLevel: 'none', redactionStrategy: ${JSON.stringify(strategy)} })
  window.tracker.start()
</script></head><body>
  <a id="mail" href="mailto:MAIL-SECRET@example.test?subject=hi">Write to us</a>
  <a id="phone" href="tel:+15550123">Call us</a>
  <a id="reset" href="/reset?token=RESET-SECRET#step-2" ping="/ping?sid=PING-SECRET">Reset your password</a>
  <a id="login" href="http://jane:USERINFO-SECRET@127.0.0.1/account">Account</a>
  <form id="pay" action="/pay?token=ACTION-SECRET"><button formaction="/pay?code=FORMACTION-SECRET">Pay</button></form>
  <picture>
    <source srcset="/photo.webp?X-Amz-Signature=SOURCE-SECRET 1x" type="image/x-none">
    <img id="photo" src="/photo.jpg?X-Amz-Credential=CREDENTIAL-SECRET&X-Amz-Signature=SIGNATURE-SECRET&X-Amz-Expires=60" srcset="/photo.jpg?token=SRCSET-SECRET 2x">
  </picture>
  <img id="logo" src="/logo.png?v=3">
  <video poster="/poster.jpg?sig=POSTER-SECRET"></video>
  <div id="banner" class="hero" style="background-image: url(/bg.jpg?X-Amz-Signature=STYLE-SECRET)">Hello</div>
  <iframe id="widget" src="${widget}/widget?api_key=IFRAME-SECRET"></iframe>
</body></html>`

function serve(key: string, core: string, strategy: RedactionStrategy = { mode: 'privacy-first' }) {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const { pathname, port } = new URL(request.url)
      if (pathname === '/t.js') return new Response(Bun.file(suite.script), { headers: { 'content-type': 'text/javascript' } })
      if (pathname === '/site.css') return new Response('.banner { background: url(/site.jpg?token=CSS-FILE-SECRET) }', { headers: { 'content-type': 'text/css' } })
      // The same server under another origin (localhost is not 127.0.0.1): the frame the page embeds.
      const widget = `http://localhost:${port}`
      const html = pathname === '/welcome' ? WELCOME(key, core) : pathname === '/reset' ? RESET : pathname === '/gallery' ? GALLERY(key, core, strategy, widget) : ''
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
      ['http://127.0.0.1:1/orders', "Failed to execute 'fetch' on 'Window': Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:1/orders"],
    ])

    const [sessionId] = new Set(bodies.map((b) => b.body.sessionId))
    await eventually(async () =>
      expect(await suite.e2e.rows(sql`select entry_url, referrer from sessions where session_id = ${sessionId}`)).toEqual([{ entry_url: entry, referrer }]),
    )
    expect(await storedTextContaining(suite.e2e, ['-secret'])).toEqual([])
  })
})

describe('URLs in the replay, in headless Chromium', () => {
  for (const mode of ['privacy-first', 'visibility-first'] as const) {
    test(`${mode}: no credential and no address from the page's markup, its later changes or its style sheets, in any payload or stored row`, async () => {
      const site = open(serve(suite.e2e.core.key, suite.e2e.base, { mode }))
      const browser = open(await openBrowser())
      const { page } = browser
      await page.goto(`${site.url}/gallery`)
      await page.waitForFunction(() => 'tracker' in window)
      // After the full snapshot: URLs changed by script, a style, a link added, rules as CSS-in-JS adds them.
      await page.evaluate(() => {
        const byId = (id: string) => document.getElementById(id) as HTMLAnchorElement & HTMLImageElement
        byId('reset').href = '/reset?token=CHANGED-SECRET'
        byId('logo').src = '/logo.png?X-Amz-Signature=CHANGED-SRC-SECRET&v=4'
        byId('banner').style.backgroundImage = 'url("/bg2.jpg?sig=CHANGED-STYLE-SECRET")'
        document.body.insertAdjacentHTML('beforeend', '<a id="added" href="mailto:ADDED-SECRET@example.test">Added</a>')
        document.querySelector('style')!.sheet!.insertRule('.avatar { background: url(/a.jpg?token=RULE-SECRET) }')
        const adopted = new CSSStyleSheet()
        adopted.replaceSync('.badge { background: url(/b.jpg?token=ADOPTED-SECRET) }')
        document.adoptedStyleSheets = [adopted]
      })
      await page.goto('about:blank')

      const handed = await browser.handed(site.url)
      const bodies = handed.map(decodeHanded)
      const everything = bodies.map((body) => body.text).join('\n')
      expect([...new Set(everything.match(SECRET))]).toEqual([])
      expect(everything).not.toContain('15550123')
      // The replay saw all of it: each URL without what was secret, ordinary ones as they are.
      const replay = JSON.stringify(bodies.filter((b) => b.path === '/events').flatMap((b) => b.body.events))
      for (const seen of [
        '"href":"mailto:"',
        '"href":"tel:"',
        `"href":"${site.url}/reset"`,
        '"href":"http://127.0.0.1/account"',
        `"action":"${site.url}/pay"`,
        `"src":"${site.url}/photo.jpg?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Expires=60"`,
        `"src":"${site.url}/logo.png?v=3"`,
        `"src":"${site.url}/logo.png?X-Amz-Signature=[redacted]&v=4"`,
        '"rr_src":"http://localhost:',
        'widget?api_key=[redacted]',
        'site.jpg?token=[redacted]',
        'hero.jpg?sig=[redacted]&w=800',
        'bg2.jpg?sig=[redacted]',
        'a.jpg?token=[redacted]',
        'b.jpg?token=[redacted]',
      ]) {
        expect(replay).toContain(seen)
      }

      const sent = produced(handed)
      await eventually(async () => expect(missing(sent.ledger, await stored(suite.e2e, sent.sessions, coreRequests(suite.coreLog.lines)))).toEqual(perKind(() => [])))
      expect(JSON.stringify(await suite.e2e.replay(sent.sessions[0]))).toContain('"href":"mailto:"')
      expect(await storedTextContaining(suite.e2e, ['-secret', '15550123'])).toEqual([])
    })
  }
})
