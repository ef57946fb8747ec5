import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { HEARTBEAT_MS, TELEMETRY_FLUSH_MS } from '@sightline/tracker/queue'
import { URL_IN_TEXT, withoutCredentials, withoutParameterValues, withoutQuery } from '@sightline/tracker/urls'
import { settle } from './helpers/clock'
import { closeAll, pageHide, replayEvents, tracked, type Tracked } from './helpers/tracker'

afterEach(closeAll)

/** The page's API: fails, with secrets in its answer's body and headers. */
let api: ReturnType<typeof Bun.serve>
beforeAll(() => {
  api = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) =>
      new Response('{"session":"RESPONSE-SECRET"}', {
        status: request.method === 'OPTIONS' ? 204 : 500,
        headers: { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST', 'set-cookie': 'sid=COOKIE-SECRET', 'x-token': 'HEADER-SECRET' },
      }),
  })
})
afterAll(() => api.stop(true))

/**
 * What the tracker sends besides the replay's text: URLs (page views, navigation, the entry URL, the
 * referrer, logs, errors, presence, requests) and what the page logs. Every secret here is a word
 * ending in -SECRET, so one search of everything sent finds any that got out.
 */
const SECRET = /[A-Z]+-SECRET/g
const leaked = (t: Tracked) => [...new Set(t.service.sent.map((r) => r.text).join('\n').match(SECRET))]

describe('withoutCredentials', () => {
  test('user names and passwords go, and the values of credential parameters in the query, the fragment and the path', () => {
    expect(withoutCredentials('https://jane:pw@app.test/x?utm_source=mail&q=shoes')).toBe('https://app.test/x?utm_source=mail&q=shoes')
    // OAuth: the implicit flow's fragment, the code flow's query, a hash router's query.
    expect(withoutCredentials('https://app.test/cb#access_token=a&token_type=bearer&expires_in=3600&state=s')).toBe('https://app.test/cb#access_token=[redacted]&token_type=[redacted]&expires_in=3600&state=s')
    expect(withoutCredentials('https://app.test/#/cb?code=c&state=s')).toBe('https://app.test/#/cb?code=[redacted]&state=s')
    // Signed links (S3, Azure), resets, keys, passwords, sessions, single sign-on tickets.
    expect(withoutCredentials('https://s3.test/f?X-Amz-Credential=a&X-Amz-Signature=b&X-Amz-Security-Token=c&sig=d&Expires=9')).toBe(
      'https://s3.test/f?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Security-Token=[redacted]&sig=[redacted]&Expires=9',
    )
    expect(withoutCredentials('https://app.test/a;jsessionid=1?reset_token=2&key=3&api_key=4&apiKey=5&password=6&pass=7&otp=8&ticket=9&PHPSESSID=0')).toBe(
      'https://app.test/a;jsessionid=[redacted]?reset_token=[redacted]&key=[redacted]&api_key=[redacted]&apiKey=[redacted]&password=[redacted]&pass=[redacted]&otp=[redacted]&ticket=[redacted]&PHPSESSID=[redacted]',
    )
    // Names that merely contain a short one stay, and so does an address in a value.
    expect(withoutCredentials('https://app.test/?keyword=red&zipcode=1&author=jane&next=a@b.test')).toBe('https://app.test/?keyword=red&zipcode=1&author=jane&next=a@b.test')
  })

  test("a name containing auth is a credential's, authorization too (the header's name, in a URL: a socket's, an API's); an author is not", () => {
    expect(withoutCredentials('wss://api.test/socket?authorization=Bearer%20eyJ&Authorisation=b&x_authorization=c&authorize_code=d&author=jane')).toBe(
      'wss://api.test/socket?authorization=[redacted]&Authorisation=[redacted]&x_authorization=[redacted]&authorize_code=[redacted]&author=jane',
    )
  })

  test('in text, every URL it names, up to the next space', () => {
    expect(withoutCredentials("Request cannot be constructed from a URL that includes credentials: http://u:pw@api.test/x?token=t (see https://docs.test/?q=1)")).toBe(
      'Request cannot be constructed from a URL that includes credentials: http://api.test/x?token=[redacted] (see https://docs.test/?q=1)',
    )
  })

  test('withoutQuery: the query and fragment go too; of a URL without a host only the scheme', () => {
    const page = 'https://app.test/page'
    expect(withoutQuery('https://u:p@api.test/v1;jsessionid=1?q=2#f', page)).toBe('https://api.test/v1;jsessionid=[redacted]')
    expect(withoutQuery('/v1/items?page=2', page)).toBe('https://app.test/v1/items')
    expect(['data:image/png;base64,AAAA', 'mailto:jane@example.com', 'blob:https://app.test/8e1c'].map((url) => withoutQuery(url, page))).toEqual(['data:', 'mailto:', 'blob:'])
  })
})

describe('URLs the tracker sends', () => {
  /** An OAuth callback reached from a password-reset page of the same site (whose full URL is the referrer). */
  const ENTRY = 'http://shop.test/welcome?utm_source=mail&token=RESET-SECRET#access_token=OAUTH-SECRET&token_type=bearer'
  const SAFE_ENTRY = 'http://shop.test/welcome?utm_source=mail&token=[redacted]#access_token=[redacted]&token_type=[redacted]'

  test('page views, navigation, the entry URL, the referrer, presence, logs and errors carry no credential', async () => {
    const t = tracked({}, { url: ENTRY, referrer: 'http://shop.test/reset?password=REFERRER-SECRET' })
    const { tracker } = t
    t.win.console.warn = () => {}
    tracker.start()
    await settle()
    await tracker.testConnection()
    t.win.history.pushState({}, '', '/account?code=PUSHED-SECRET')
    t.win.console.warn('retrying https://api.test/orders?api_key=LOGGED-SECRET')
    t.win.dispatchEvent(new t.win.ErrorEvent('error', { message: 'could not load https://u:THROWN-SECRET@cdn.test/x', filename: 'http://shop.test/app.js?sig=SCRIPT-SECRET', lineno: 1, colno: 2 }))
    tracker.trackNavigationEvent('push', 'http://u:FROM-SECRET@shop.test/', 'http://shop.test/?session=TO-SECRET')
    await t.clock.advance(3000)
    pageHide(t.win)
    await t.service.beaconsRead()

    expect(leaked(t)).toEqual([])
    const events = t.service.to('/customEvent/batch').flatMap((r) => r.body.events)
    const [pageView] = events.filter((e: { eventName: string }) => e.eventName === '$pageview')
    expect(pageView.eventProperties).toMatchObject({ url: SAFE_ENTRY, path: '/welcome', referrer: 'http://shop.test/reset?password=[redacted]' })
    expect(t.service.to('/events')[0].body.automaticProperties.referrer).toBe('http://shop.test/reset?password=[redacted]')
    expect(replayEvents(t.service).find((e) => e.type === 4).data.href).toBe(SAFE_ENTRY)
    expect(t.service.to('/init')[0].body).toMatchObject({ entryURL: SAFE_ENTRY, referrer: 'http://shop.test/reset?password=[redacted]' })
    expect(t.service.to('/heartbeat')[0].body.url).toBe(SAFE_ENTRY)
    const logs = t.service.to('/logs').flatMap((r) => r.body.logs)
    expect(logs.find((log: { level: string }) => log.level === 'warn')).toMatchObject({ message: 'retrying https://api.test/orders?api_key=[redacted]', url: 'http://shop.test/account?code=[redacted]' })
    expect(t.service.to('/errors')[0].body.errors[0]).toMatchObject({ message: 'could not load https://cdn.test/x', url: 'http://shop.test/account?code=[redacted]', context: { filename: 'http://shop.test/app.js?sig=[redacted]' } })
    expect(events.filter((e: { eventName: string }) => e.eventName === '$navigation').map((e: { eventProperties: object }) => e.eventProperties)).toEqual([
      { type: 'push', from: SAFE_ENTRY, to: 'http://shop.test/account?code=[redacted]' },
      { type: 'push', from: 'http://shop.test/', to: 'http://shop.test/?session=[redacted]' },
    ])
  })
})

describe('what was typed into a page URL', () => {
  test("a parameter's value goes, and a query's bare words; campaigns' values and the fragment's anchor stay", () => {
    expect(withoutParameterValues('http://shop.test/search?secret+words&q=x&&utm_source=mail&flag#top')).toBe('http://shop.test/search?[redacted]&q=[redacted]&&utm_source=mail&[redacted]#top')
  })

  test('in text, each URL ends before a stack frame\'s line and column, which stay', () => {
    const stack = 'at a (http://localhost:3000/s?q=x:12:5)\n    at http://shop.test/s?hunter:1:2\nb@https://cdn.test/app.js?v=3:4:5 "http://shop.test/?q=y"'
    expect(stack.replace(URL_IN_TEXT, withoutParameterValues)).toBe(
      'at a (http://localhost:3000/s?q=[redacted]:12:5)\n    at http://shop.test/s?[redacted]:1:2\nb@https://cdn.test/app.js?v=[redacted]:4:5 "http://shop.test/?q=[redacted]"',
    )
  })

  test('in text, a URL whose scheme is in capitals is one too (a link as someone typed it, an old system\'s message)', () => {
    expect('failed: HTTPS://shop.test/s?q=hunter2 and Http://shop.test/?hunter3'.replace(URL_IN_TEXT, withoutParameterValues)).toBe('failed: HTTPS://shop.test/s?q=[redacted] and Http://shop.test/?[redacted]')
  })

  /** A search box sent by GET (its text masked on the page), reached from another search, from a campaign's link. */
  const SEARCH = 'http://shop.test/search?q=hunter2&utm_source=mail&gclid=ad1#results'
  async function search(mode: 'privacy-first' | 'visibility-first') {
    const t = tracked({ redactionStrategy: { mode } }, { url: SEARCH, referrer: 'http://shop.test/search?q=hunter1', html: '<form><input name="q"></form>' })
    const { tracker, win } = t
    win.console.warn = win.console.error = () => {}
    tracker.start()
    await settle()
    await tracker.testConnection()
    win.console.warn('no results')
    // An inline script's error names the page: in its file name and its stack's frames.
    const page = SEARCH.split('#')[0]
    win.dispatchEvent(new win.ErrorEvent('error', { message: 'search failed', filename: page, lineno: 12, colno: 5 }))
    const inline = Object.assign(new Error('handled'), { stack: `Error: handled\n    at search (${page}:12:5)` })
    tracker.captureError(inline)
    win.console.error('retrying', inline)
    win.history.pushState({}, '', '/search?q=hunter3&page=2')
    tracker.trackNavigationEvent('push', SEARCH, 'http://shop.test/search?q=hunter4')
    tracker.trackPageView('/search?q=hunter5')
    await t.clock.advance(HEARTBEAT_MS)
    pageHide(win)
    await t.service.beaconsRead()
    const kinds = new Set(t.service.sent.map((r) => r.path.replace('/api/ingestion', '')))
    for (const kind of ['/events', '/customEvent/batch', '/heartbeat', '/init', '/logs', '/errors']) expect(kinds).toContain(kind)
    return { t, everything: t.service.sent.map((r) => r.text).join('\n') }
  }

  test('privacy-first: every page URL and referrer sent keeps the names of its parameters, not their values; campaigns keep theirs', async () => {
    const { t, everything } = await search('privacy-first')
    expect(everything).not.toMatch(/hunter\d/)
    const url = 'http://shop.test/search?q=[redacted]&utm_source=mail&gclid=ad1#results'
    expect(replayEvents(t.service).find((e) => e.type === 4).data.href).toBe(url)
    expect(t.service.to('/heartbeat')[0].body.url).toBe(url)
    expect(t.service.to('/init')[0].body).toMatchObject({ entryURL: url, referrer: 'http://shop.test/search?q=[redacted]' })
    const events = t.service.to('/customEvent/batch').flatMap((r) => r.body.events)
    expect(events.filter((e: { eventName: string }) => e.eventName === '$pageview').map((e: { eventProperties: { url: string } }) => e.eventProperties.url)).toEqual([
      url,
      'http://shop.test/search?q=[redacted]&page=[redacted]',
      'http://shop.test/search?q=[redacted]',
    ])
  })

  test('visibility-first keeps them', async () => {
    const { t, everything } = await search('visibility-first')
    for (const word of ['hunter1', 'hunter2', 'hunter3', 'hunter4', 'hunter5']) expect(everything).toContain(word)
    expect(t.service.to('/heartbeat')[0].body.url).toBe(SEARCH)
  })
})

describe("the page's requests", () => {
  const requestsOnly = { pageViews: false, navigation: false, clicks: false, rageClicks: false, forms: false, console: false, errors: false }

  test('their bodies and headers, sent or answered, are never read', async () => {
    const t = tracked({ automaticTrackingOptions: requestsOnly })
    t.tracker.start()
    await settle()
    const url = `http://127.0.0.1:${api.port}/login`
    const headers = { authorization: 'Bearer AUTHORIZATION-SECRET', 'content-type': 'application/json' }
    await (await t.win.fetch(url, { method: 'POST', headers, body: '{"password":"BODY-SECRET"}' })).text()
    await new Promise<void>((resolve) => {
      const xhr = new t.win.XMLHttpRequest()
      xhr.open('POST', url)
      xhr.setRequestHeader('authorization', 'Bearer XHR-AUTHORIZATION-SECRET')
      xhr.addEventListener('loadend', () => resolve())
      xhr.send('{"password":"XHR-BODY-SECRET"}')
    })
    await settle()
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(t.service.to('/network').flatMap((r) => r.body.errors).map((e: { method: string; url: string; status: number }) => [e.method, e.url, e.status])).toEqual([
      ['POST', url, 500],
      ['POST', url, 500],
    ])
    expect(leaked(t)).toEqual([])
  })

  test("no credential in the URL nor in the browser's message about it; a data: URL is not a request", async () => {
    const t = tracked({ automaticTrackingOptions: requestsOnly })
    t.tracker.start()
    await settle()
    // The browser refuses a URL with credentials, and says so naming the URL as given.
    const refused = await t.win.fetch('http://jane:FETCH-SECRET@127.0.0.1:1/orders?token=QUERY-SECRET').catch((error: Error) => error.message)
    expect(refused).toContain('FETCH-SECRET')
    // A photo being uploaded, turned into a blob.
    await t.win.fetch('data:image/png;base64,PHOTO-SECRET')
    await t.win.fetch('http://127.0.0.1:1/cart;jsessionid=PATH-SECRET').catch(() => {})
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(leaked(t)).toEqual([])
    const spans = t.service.to('/spans/batch').flatMap((r) => r.body.spans)
    expect(spans.map((s: { name: string; attributes: Record<string, unknown> }) => [s.name, s.attributes['http.url']])).toEqual([
      ['GET /orders', 'http://127.0.0.1:1/orders'],
      ['GET /cart;jsessionid=[redacted]', 'http://127.0.0.1:1/cart;jsessionid=[redacted]'],
    ])
    const [error] = t.service.to('/network').flatMap((r) => r.body.errors)
    // As the request's own URL goes: without its query, not only its credentials' values.
    expect(error.errorMessage).toContain('http://127.0.0.1:1/orders ')
    expect(spans[0].status.message).toBe(error.errorMessage)
  })
})

describe('what the page logs', () => {
  test('a node is sent as its name: what frameworks keep on it (a field’s value) is not', async () => {
    const t = tracked({ automaticTrackingOptions: { pageViews: false, clicks: false, network: false, spans: false } }, { html: '<input id="email">' })
    t.win.console.error = () => {}
    t.tracker.start()
    await settle()
    // Vue keeps a bound field's value on the element as `_value`; jQuery its data.
    const input = Object.assign(t.win.document.getElementById('email')!, { _value: 'TYPED-SECRET' })
    t.win.console.error('invalid field', input, { field: input, errors: 1 })
    await t.clock.advance(TELEMETRY_FLUSH_MS)
    expect(leaked(t)).toEqual([])
    expect(t.service.to('/logs')[0].body.logs[0].message).toBe('invalid field "INPUT" {"field":"INPUT","errors":1}')
  })
})

describe('URLs in the replay', () => {
  /**
   * A page's URLs as its markup has them: where links and forms lead (an address, a reset link, a
   * login in the URL), and what it loads (a signed image, candidates in srcset, a background in an
   * inline style and in a style sheet), next to ordinary ones; and one in the text.
   */
  const PAGE = `<!doctype html><html><head><style>.hero { background: url("/hero.jpg?sig=SHEET-SECRET&w=800") }</style></head><body>
    <a id="mail" href="mailto:MAIL-SECRET@example.test?subject=hi">Write to us</a>
    <a id="phone" href="tel:+15550123">Call</a>
    <a id="reset" href="/reset?token=RESET-SECRET&next=/home#step-2" ping="https://t.test/ping?sid=PING-SECRET">Reset</a>
    <a id="login" href="https://jane:USERINFO-SECRET@shop.test/account">Account</a>
    <a id="plain" href="/shoes?page=2">Shoes</a>
    <form id="pay" action="/pay?token=ACTION-SECRET"><button formaction="/pay?code=FORMACTION-SECRET">Pay</button></form>
    <img id="photo" src="https://bucket.test/me.jpg?X-Amz-Credential=CREDENTIAL-SECRET&X-Amz-Signature=SIGNATURE-SECRET&X-Amz-Expires=60"
      srcset="https://cdn.test/w_100,h_100/me.jpg?token=SRCSET-SECRET, https://cdn.test/me.jpg?token=SRCSET-SECRET 2x">
    <img id="logo" src="/logo.png?v=3" data-src="/lazy.jpg?sig=LAZY-SECRET">
    <div id="banner" style="background-image: url(https://bucket.test/bg.jpg?X-Amz-Signature=STYLE-SECRET)">Hello</div>
    <p>Your link: https://shop.test/r?token=TEXT-SECRET</p>
  </body></html>`

  /** The replay, after the page changed its URLs: attributes set, a style, and a link added. */
  async function recordChanges(mode: 'privacy-first' | 'visibility-first') {
    const t = tracked({ enableAutomaticTracking: false, redactionStrategy: { mode } }, { html: PAGE })
    const doc = t.win.document
    t.tracker.start()
    await settle()
    doc.getElementById('plain')!.setAttribute('href', '/reset?token=CHANGED-SECRET')
    doc.getElementById('logo')!.setAttribute('src', 'https://bucket.test/logo.png?X-Amz-Signature=CHANGED-SRC-SECRET&v=4')
    ;(doc.getElementById('banner') as HTMLElement).style.backgroundImage = 'url("https://bucket.test/bg2.jpg?sig=CHANGED-STYLE-SECRET")'
    doc.body.insertAdjacentHTML('beforeend', '<a id="added" href="mailto:ADDED-SECRET@example.test">Added</a>')
    await settle()
    await t.clock.advance(3000)
    return { t, replay: JSON.stringify(replayEvents(t.service)) }
  }

  for (const mode of ['privacy-first', 'visibility-first'] as const) {
    test(`${mode}: no credential and no address in the snapshot or in changes; ordinary URLs as they are`, async () => {
      const { t, replay } = await recordChanges(mode)
      expect(leaked(t)).toEqual([])
      expect(replay).not.toContain('15550123')
      // Where links and forms lead: as clicked links go, absolute, without query and fragment;
      // of an address only its scheme.
      for (const href of ['mailto:', 'tel:', 'http://shop.test/reset', 'https://shop.test/account']) expect(replay).toContain(`"href":"${href}"`)
      expect(replay).toContain('"action":"http://shop.test/pay"')
      expect(replay).toContain('"formaction":"http://shop.test/pay"')
      // What loads keeps its URL, only the credentials' values go: the image is there, unloadable.
      expect(replay).toContain('"src":"https://bucket.test/me.jpg?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Expires=60"')
      expect(replay).toContain('"srcset":"https://cdn.test/w_100,h_100/me.jpg?token=[redacted], https://cdn.test/me.jpg?token=[redacted] 2x"')
      expect(replay).toContain('"src":"http://shop.test/logo.png?v=3"')
      expect(replay).toContain('"src":"https://bucket.test/logo.png?X-Amz-Signature=[redacted]&v=4"')
      expect(replay).toContain('"data-src":"/lazy.jpg?sig=[redacted]"')
      expect(replay).toContain('url(https://bucket.test/bg.jpg?X-Amz-Signature=[redacted])')
      expect(replay).toContain('hero.jpg?sig=[redacted]&w=800')
      expect(replay).toContain('bg2.jpg?sig=[redacted]')
    })
  }

  test("privacy-first: metas that repeat the page's text (description, social, author) are not recorded, added later neither", async () => {
    const html = `<!doctype html><html><head><title>SECRET-TITLE</title><meta name="description" content="SECRET-DESCRIPTION">
      <meta property="og:title" content="SECRET-OG-TITLE"><meta name="twitter:description" content="SECRET-TWITTER">
      <meta name="author" content="SECRET-AUTHOR"><meta name="viewport" content="width=device-width"></head><body><p>SECRET-TEXT</p></body></html>`
    const t = tracked({ enableAutomaticTracking: false }, { html })
    const doc = t.win.document
    t.tracker.start()
    await settle()
    doc.head.insertAdjacentHTML('beforeend', '<meta property="og:description" content="SECRET-ADDED">')
    doc.querySelector('meta[name=description]')!.setAttribute('content', 'SECRET-CHANGED')
    await settle()
    await t.clock.advance(3000)
    const replay = JSON.stringify(replayEvents(t.service))
    for (const secret of ['SECRET-TITLE', 'SECRET-DESCRIPTION', 'SECRET-OG-TITLE', 'SECRET-TWITTER', 'SECRET-AUTHOR', 'SECRET-TEXT', 'SECRET-ADDED', 'SECRET-CHANGED'])
      expect(replay).not.toContain(secret)
    expect(replay).toContain('"content":"width=device-width"')
  })

  for (const mode of ['privacy-first', 'visibility-first'] as const) {
    test(`${mode}: hidden values (a hidden input, a token's meta) are masked, set later too; other metas stay`, async () => {
      const html = `<!doctype html><html><head><meta name="csrf-token" content="META-SECRET"><meta name="viewport" content="width=device-width">
        </head><body><form><input id="csrf" type="hidden" name="_csrf" value="HIDDEN-SECRET"><input id="q" name="q" value="shoes"></form></body></html>`
      const t = tracked({ enableAutomaticTracking: false, redactionStrategy: { mode } }, { html })
      const doc = t.win.document
      t.tracker.start()
      await settle()
      const hidden = doc.getElementById('csrf') as HTMLInputElement
      hidden.setAttribute('value', 'ATTRIBUTE-SECRET')
      await settle()
      hidden.value = 'PROPERTY-SECRET'
      doc.head.insertAdjacentHTML('beforeend', '<meta name="xsrf-token" content="ADDED-META-SECRET">')
      await settle()
      await t.clock.advance(3000)
      const replay = JSON.stringify(replayEvents(t.service))
      for (const secret of ['META-SECRET', 'HIDDEN-SECRET', 'ATTRIBUTE-SECRET', 'PROPERTY-SECRET', 'ADDED-META-SECRET']) expect(replay).not.toContain(secret)
      expect(replay).toContain('"content":"width=device-width"')
      if (mode === 'visibility-first') expect(replay).toContain('"value":"shoes"')
    })
  }
})
