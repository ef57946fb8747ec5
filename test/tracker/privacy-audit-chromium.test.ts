import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { openBrowser, type TestBrowser } from '../e2e/browser'
import { builtTracker } from './helpers/build'

/**
 * A privacy review of everything the default tracker (t.js as built, privacy-first, automatic tracking
 * on) sends from a realistic page in headless Chromium: secrets planted as SECRET-… words in every
 * place a page keeps them, and every request the tracker made (its URL and its body, gunzipped)
 * searched for them.
 */

interface Sent {
  url: string
  body: unknown
}

let browser: TestBrowser
let server: ReturnType<typeof Bun.serve>
const sent: Sent[] = []
const html = (body: string) => new Response(`<!doctype html>${body}`, { headers: { 'content-type': 'text/html; charset=utf-8' } })

/** The page a password-reset or OAuth redirect lands on, every kind of secret planted in it. */
const AUDITED = `<html><head><meta charset="utf-8"><title>SECRET-DOCTITLE</title>
<meta name="csrf-token" content="SECRET-CSRFMETA"><style>.badge::before { content: "SECRET-CSSCONTENT" }</style></head><body>
<p>Hello SECRET-BODYTEXT</p>
<div class="secret-area"><button id="pay" type="button">SECRET-BUTTON</button><a id="link" href="/next?email=SECRET-LINKQUERY#SECRET-LINKFRAG">SECRET-LINKTEXT</a><span class="badge"></span></div>
<form id="signup" name="signup" action="/signup?invite=SECRET-ACTIONQUERY" method="post" onsubmit="event.preventDefault()">
  <input id="text" name="fullname">
  <input id="email" type="email" name="email">
  <input id="password" type="password" name="password">
  <input id="tel" type="tel" name="tel">
  <input id="hidden" type="hidden" name="csrf" value="SECRET-HIDDEN">
  <input id="search" type="search" name="q">
  <textarea id="notes" name="notes"></textarea>
  <input id="scripted" name="scripted">
  <input id="autofill" name="address" autocomplete="street-address" value="SECRET-AUTOFILL">
  <input id="cc" autocomplete="billing cc-number" name="card">
  <input id="otp" name="otp" autocomplete="one-time-code">
  <select id="plan" name="plan"><option value="SECRET-OPTVALUE-1">SECRET-OPTTEXT-1</option><option value="SECRET-OPTVALUE-2">SECRET-OPTTEXT-2</option></select>
  <input id="masked-attrs" placeholder="SECRET-PLACEHOLDER" title="SECRET-TITLEATTR" aria-label="SECRET-ARIA" data-user="SECRET-DATAATTR">
  <img alt="SECRET-ALT" src="/img.png?token=SECRET-IMGTOKEN&amp;user=SECRET-IMGUSER">
  <input id="file" type="file" name="upload">
  <button id="submit" type="submit">SECRET-SUBMITTEXT</button>
</form>
<div id="editable" contenteditable="true"></div>
<canvas id="canvas" width="200" height="40"></canvas>
<shop-card id="card"></shop-card>
<iframe id="frame" src="/frame"></iframe>
<script>
  customElements.define('shop-card', class extends HTMLElement {
    connectedCallback() { this.attachShadow({ mode: 'open' }).innerHTML = '<span>SECRET-SHADOWTEXT</span><input id="shadow-input">' }
  })
  document.getElementById('canvas').getContext('2d').fillText('SECRET-CANVAS', 10, 20)
</script>
<script src="/t.js"></script></body></html>`


/** Less common places a page keeps text: attributes and elements a review might miss. */
const CORNERS = `<html><head><meta charset="utf-8"><title>corners</title>
<meta name="description" content="SECRET-METADESC"><meta property="og:url" content="https://shop.example/reset?email=SECRET-OGURL">
<link rel="canonical" href="https://shop.example/reset?email=SECRET-CANONICAL">
<script type="application/json" id="__NEXT_DATA__">{"user":{"email":"SECRET-NEXTDATA"}}</script>
<script type="application/ld+json">{"name":"SECRET-LDJSON"}</script></head><body>
<select id="labelled"><optgroup label="SECRET-OPTGROUP"><option label="SECRET-OPTLABEL" value="v1">x</option></optgroup></select>
<input list="suggestions" id="suggest"><datalist id="suggestions"><option value="SECRET-DATALIST"></option></datalist>
<div role="slider" aria-valuetext="SECRET-VALUETEXT" aria-valuenow="5" aria-description="SECRET-ARIADESC" aria-roledescription="SECRET-ROLEDESC" aria-placeholder="SECRET-ARIAPLACEHOLDER"></div>
<div aria-labelledby="x" aria-describedby="y"></div>
<data value="SECRET-DATAVALUE">x</data><meter value="0.5">x</meter>
<abbr title="SECRET-ABBR">a</abbr><table><tr><th abbr="SECRET-THABBR">h</th></tr></table>
<input type="image" alt="SECRET-INPUTIMAGEALT" src="/img.png"><img src="/img.png" usemap="#m"><map name="m"><area alt="SECRET-AREAALT" href="/a?email=SECRET-AREAHREF" shape="rect" coords="0,0,1,1"></map>
<input type="submit" value="SECRET-SUBMITVALUE"><input type="button" value="SECRET-BUTTONVALUE"><button value="SECRET-BUTTONEL">b</button>
<textarea id="prefilled">SECRET-TEXTAREA-INITIAL</textarea>
<input id="attr-set"><input type="checkbox" value="SECRET-CHECKBOXVALUE"><input type="date" id="date"><input type="range" id="range">
<iframe srcdoc="<p>SECRET-SRCDOC</p>"></iframe>
<iframe src="/frame?token=SECRET-FRAMETOKEN&user=SECRET-FRAMEUSER"></iframe>
<video poster="/img.png?user=SECRET-POSTER"><track kind="captions" label="SECRET-TRACKLABEL" src="/c.vtt"></video>
<template><p>SECRET-TEMPLATE</p></template><noscript>SECRET-NOSCRIPT</noscript>
<details><summary>SECRET-SUMMARY</summary>SECRET-DETAILS</details>
<svg><text>SECRET-SVGTEXT</text><title>SECRET-SVGTITLE</title><desc>SECRET-SVGDESC</desc></svg>
<math><mi>SECRET-MATH</mi></math>
<div id="later"></div>
<button id="inline" onclick="throw new Error('inline failed')">i</button>
<script src="/t.js"></script></body></html>`


/** URLs a page holds in attributes: each with a credential (token) and another value (user). */
const q = (name: string) => `?token=SECRET-${name}-TOKEN&amp;user=SECRET-${name}-USER`
const URLS = `<html><head><meta charset="utf-8"><title>urls</title>
<link rel="prefetch" href="/next${q('PREFETCH')}"><link rel="icon" href="/favicon.ico${q('ICON')}"><link rel="manifest" href="/m.json${q('MANIFEST')}">
<link rel="stylesheet" href="/s.css${q('STYLESHEET')}"><link rel="preload" as="image" href="/img.png${q('PRELOAD')}">
<meta property="og:image" content="https://shop.example/i.png${q('OGIMAGE')}"><meta http-equiv="refresh" content="3600;url=/later${q('REFRESH')}">
<base href="/base/${q('BASE')}"></head><body>
<form action="/f"><button formaction="/go${q('FORMACTION')}">x</button><input type="image" src="/img.png${q('INPUTIMAGE')}"></form>
<a href="/a${q('PING')}" ping="/ping${q('PINGATTR')}">a</a>
<blockquote cite="https://shop.example/q${q('CITE')}">c</blockquote>
<object data="/o${q('OBJECT')}"></object><embed src="/e${q('EMBED')}">
<audio src="/a.mp3${q('AUDIO')}"></audio><video><source src="/v.mp4${q('SOURCE')}"></video>
<img srcset="/img.png${q('SRCSET')} 1x, /img.png${q('SRCSET2')} 2x">
<svg><a href="/svg${q('SVGHREF')}"><text>s</text></a><a xlink:href="/svgx${q('SVGXLINK')}"><text>t</text></a><image href="/img.png${q('SVGIMAGE')}"></image></svg>
<div style="background-image:url('/img.png${q('STYLEATTR')}')"></div>
<a href="https://user-SECRET-USERINFO:pw-SECRET-PASSWORDINFO@shop.example/x">u</a>
<a href="javascript:void('SECRET-JSHREF')">j</a>
<a href="mailto:SECRET-MAILTO@example.com?subject=SECRET-MAILSUBJECT">m</a><a href="tel:+1555SECRET-TELHREF">t</a>
<a href="sms:+1555SECRET-SMS?body=SECRET-SMSBODY">s</a><a href="data:text/plain,SECRET-DATAURL">d</a><a href="blob:http://x/SECRET-BLOB">b</a>
<script src="/t.js"></script></body></html>`


/** A page changed after recording began: what the recorder sees as mutations, not in a snapshot. */
const LATER = `<html><head><meta charset="utf-8"><title>later</title><style id="sheet"></style></head><body>
<div id="root"></div><a id="link" href="/plain">l</a><img id="img" src="/img.png"><div id="styled"></div><iframe id="frame" src="/frame"></iframe>
<meta id="meta" name="x" content="y"><link id="canon" rel="canonical" href="/c">
<script src="/t.js"></script></body></html>`


/** Relative URLs a page holds, which resolve against the page's own URL (its query included). */
const RELATIVE = `<html><head><meta charset="utf-8"><title>relative</title>
<style>.f { filter: url(#blur) } .g { background: url(?bg=1) } .h { background: url('') }</style></head><body>
<svg><defs><linearGradient id="grad"></linearGradient><symbol id="icon"></symbol></defs><use href="#icon"></use><use xlink:href="#icon"></use><rect fill="url(#grad)" width="1" height="1"></rect><image href=""></image></svg>
<a href="#top">top</a><a href="">self</a><a href="?page=2">next</a><form action=""><button>go</button></form><form action="#"></form>
<img src=""><iframe src=""></iframe><video poster=""></video>
<div style="background:url(#bg)"></div><div style="background:url('?bg=2')"></div>
<link rel="stylesheet" href="?theme=dark"><link rel="alternate" href="#alt">
<script src="/t.js"></script></body></html>`

/** Every planted secret: the words the sends are searched for. */
const MARKERS = /SECRET-[A-Z0-9-]+/g

beforeAll(async () => {
  const script = await Bun.file(join(await builtTracker(), 't.js')).arrayBuffer()
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname.includes('/api/ingestion/')) {
        const bytes = new Uint8Array(await request.arrayBuffer())
        const text = new TextDecoder().decode(url.searchParams.get('compression') === 'gzip' ? Bun.gunzipSync(bytes) : bytes)
        sent.push({ url: request.url, body: JSON.parse(text) })
        return Response.json({ success: true })
      }
      if (url.pathname === '/t.js') return new Response(script, { headers: { 'content-type': 'text/javascript' } })
      if (url.pathname === '/start') return html(`<title>start</title><a id="go" href="/reset/SECRET-PATH?token=SECRET-QTOKEN&email=SECRET-QEMAIL#access_token=SECRET-FRAGTOKEN&state=SECRET-FRAGSTATE">go</a>`)
      if (url.pathname.startsWith('/reset/')) return html(AUDITED)
      if (url.pathname === '/relative') return html(RELATIVE)
      if (url.pathname === '/later') return html(LATER)
      if (url.pathname === '/urls') return html(URLS)
      if (url.pathname === '/corners') return html(CORNERS)
      if (url.pathname === '/frame') return html(`<p>SECRET-FRAMETEXT</p><input id="frame-input">`)
      if (url.pathname === '/api/fail') return new Response('no', { status: 500 })
      return new Response('', { status: url.pathname === '/img.png' ? 200 : 404 })
    },
  })
  browser = await openBrowser()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  server?.stop(true)
})

/** Where each SECRET-… word was sent: the send's path and the JSON path of the value holding it. */
function placesOf(): Map<string, Set<string>> {
  const places = new Map<string, Set<string>>()
  const visit = (value: unknown, where: string) => {
    if (typeof value === 'string') {
      for (const marker of value.match(MARKERS) ?? []) places.set(marker, (places.get(marker) ?? new Set()).add(where))
    } else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) visit(inner, `${where}.${/^\d+$/.test(key) ? '[]' : key}`)
    }
  }
  for (const { url, body } of sent) {
    const path = new URL(url).pathname.replace(/.*\/api\/ingestion/, '')
    visit(url, `${path} (request URL)`)
    visit(body, path)
  }
  return places
}

/** The SECRET-… words sent, each once, sorted. */
const markersSent = () => [...placesOf().keys()].sort()

/**
 * What README documents as kept in privacy-first mode, and so sent: what the page logs and throws
 * (the typed email and name in its messages), a `data-*` attribute, style sheets (CSS `content:`), the
 * URLs of what the page loads but their credentials (an image's `user=`), what is typed in a URL's
 * path and a fragment's anchor (`#SECRET`).
 */
const KEPT_PRIVACY_FIRST = ['SECRET-ANCHOR', 'SECRET-CONSOLEWARN', 'SECRET-CSSCONTENT', 'SECRET-DATAATTR', 'SECRET-EMAIL', 'SECRET-IMGUSER', 'SECRET-PATH', 'SECRET-TEXT']
/** Visibility-first keeps, besides, what no selector masks: inputs' values, text, URLs' values but credentials'. */
const KEPT_VISIBILITY_FIRST = [...KEPT_PRIVACY_FIRST, 'SECRET-AUTOFILL', 'SECRET-AUTOFILLED', 'SECRET-BODYTEXT', 'SECRET-FILENAME', 'SECRET-FRAGSTATE', 'SECRET-OTP', 'SECRET-PUSHEMAIL', 'SECRET-QEMAIL', 'SECRET-REFQUERY', 'SECRET-SCRIPTED-AFTER', 'SECRET-SCRIPTED-BEFORE', 'SECRET-SEARCH', 'SECRET-SUBMITTEXT', 'SECRET-TEL']

/** Starts t.js on the open page (privacy-first unless told otherwise) and lets it take its first snapshot. */
async function startTracker(redactionStrategy?: object) {
  await browser.page.evaluate((redactionStrategy) => {
    const tracker = (window as any).ServiceTracker.init('sl_dev_audit', { ingestionUrl: location.origin + '/_sl', redactionStrategy })
    ;(window as any).tracker = tracker
    tracker.start()
  }, redactionStrategy)
  await browser.page.waitForTimeout(500)
}

/** Logs out and leaves the page, then waits for what the tracker sends on the way out (the replay). */
async function leave() {
  const tab = browser.page
  await tab.waitForTimeout(500)
  await tab.evaluate(() => (window as any).tracker.logout())
  await tab.waitForTimeout(500)
  await tab.goto('about:blank')
  for (let i = 0; i < 100 && !sent.some((s) => s.url.includes('/events')); i++) await Bun.sleep(25)
  await Bun.sleep(500)
}

describe('privacy audit: what the default tracker sends', () => {
  for (const mode of ['privacy-first', 'visibility-first'] as const)
  test(`${mode}: no planted secret is sent but what README says is kept`, async () => {
    sent.length = 0
    const redactionStrategy = mode == 'privacy-first' ? undefined : { mode, redactSelectors: ['.secret-area', '#masked-attrs', 'shop-card', '#frame', '#editable', 'title', '#text', '#notes', 'select', 'img'] }
    const tab = browser.page
    const origin = `http://127.0.0.1:${server.port}`
    await tab.goto(origin + '/start?token=SECRET-REFTOKEN&q=SECRET-REFQUERY')
    await tab.click('#go')
    await tab.waitForSelector('#frame')
    await tab.evaluate(() => ((document.getElementById('scripted') as HTMLInputElement).value = 'SECRET-SCRIPTED-BEFORE'))
    await startTracker(redactionStrategy)
    await tab.locator("#cc").pressSequentially('SECRET-CARD')
    await tab.locator('#text').pressSequentially('SECRET-TEXT')
    await tab.locator('#email').pressSequentially('SECRET-EMAIL@example.com')
    await tab.locator('#password').pressSequentially('SECRET-PASSWORD')
    await tab.locator('#tel').pressSequentially('SECRET-TEL')
    await tab.locator('#search').pressSequentially('SECRET-SEARCH')
    await tab.locator('#notes').pressSequentially('SECRET-TEXTAREA')
    await tab.locator('#otp').pressSequentially('SECRET-OTP')
    await tab.locator('#editable').pressSequentially('SECRET-EDITABLE')
    await tab.locator('#shadow-input').pressSequentially('SECRET-SHADOWINPUT')
    await tab.frameLocator('#frame').locator('#frame-input').pressSequentially('SECRET-FRAMEINPUT')
    await tab.selectOption('#plan', 'SECRET-OPTVALUE-2')
    await tab.setInputFiles('#file', { name: 'SECRET-FILENAME.txt', mimeType: 'text/plain', buffer: Buffer.from('SECRET-FILECONTENT') })
    await tab.evaluate(() => ((document.getElementById('scripted') as HTMLInputElement).value = 'SECRET-SCRIPTED-AFTER'))
    await tab.evaluate(() => ((document.getElementById('autofill') as HTMLInputElement).value = 'SECRET-AUTOFILLED'))
    // Three clicks on a masked button: $click and $rageclick.
    for (let i = 0; i < 3; i++) await tab.click('#pay')
    await tab.evaluate(() => document.getElementById('link')!.addEventListener('click', (event) => event.preventDefault()))
    await tab.click('#link')
    await tab.click('#submit')
    await tab.evaluate(async () => {
      const typed = (document.getElementById('email') as HTMLInputElement).value
      console.log('signing up', typed)
      console.warn('warned SECRET-CONSOLEWARN', { field: typed })
      console.error('failed for ' + typed)
      setTimeout(() => {
        throw new Error('invalid email ' + typed)
      })
      Promise.reject(new Error('rejected ' + (document.getElementById('text') as HTMLInputElement).value))
      await fetch('/api/fail?token=SECRET-FETCHTOKEN&email=SECRET-FETCHEMAIL#SECRET-FETCHFRAG').catch(() => {})
      await fetch('http://127.0.0.1:1/down?email=SECRET-NETERROR').catch(() => {})
      const xhr = new XMLHttpRequest()
      xhr.open('GET', '/api/fail?user=SECRET-XHRQUERY')
      xhr.send()
      await new Promise((resolve) => (xhr.onloadend = resolve))
      history.pushState({}, '', '/account/reset?token=SECRET-PUSHTOKEN&email=SECRET-PUSHEMAIL#id_token=SECRET-PUSHFRAG')
      document.title = 'SECRET-DOCTITLE-AFTER'
      location.hash = '#SECRET-ANCHOR'
    })
    await leave()
    const markers = markersSent()
    if (mode == 'privacy-first') expect(markers).toEqual(KEPT_PRIVACY_FIRST)
    // An input's value goes as typed, one character more each time (SECRET-S, SECRET-SE, ...).
    else expect(markers.filter((marker) => !KEPT_VISIBILITY_FIRST.some((kept) => kept.startsWith(marker)))).toEqual([])
  }, 120_000)
  test('corners: no planted secret is sent but what README says is kept', async () => {
    sent.length = 0
    const tab = browser.page
    const origin = `http://127.0.0.1:${server.port}`
    await tab.goto(origin + '/corners?token=SECRET-CQTOKEN&q=SECRET-CQUERY')
    await startTracker()
    await tab.evaluate(() => {
      document.getElementById('attr-set')!.setAttribute('value', 'SECRET-SETATTR')
      ;(document.getElementById('prefilled') as HTMLTextAreaElement).textContent = 'SECRET-TEXTAREA-TEXT'
      document.getElementById('later')!.innerHTML = '<p title="SECRET-LATERTITLE">SECRET-LATERTEXT</p><input value="SECRET-LATERVALUE" placeholder="SECRET-LATERPH">'
      document.getElementById('later')!.setAttribute('aria-label', 'SECRET-LATERARIA')
    })
    await tab.fill('#date', '2020-01-02')
    await tab.locator('#suggest').pressSequentially('SECRET-SUGGEST')
    await tab.click('#inline').catch(() => {})
    await leave()
    // A video's poster is a URL the page loads: its values but credentials' are kept.
    expect(markersSent()).toEqual(['SECRET-POSTER'])
  }, 120_000)
  test('urls: no planted secret is sent but what README says is kept', async () => {
    sent.length = 0
    const tab = browser.page
    const origin = `http://127.0.0.1:${server.port}`
    await tab.goto(origin + '/urls')
    await startTracker()
    await leave()
    // What the page loads keeps its URL's values but credentials' (and so does a <base>, and a quote's cite).
    expect(markersSent()).toEqual(['AUDIO', 'BASE', 'CITE', 'EMBED', 'INPUTIMAGE', 'OBJECT', 'PINGATTR', 'REFRESH', 'SOURCE', 'SRCSET', 'SRCSET2', 'STYLEATTR', 'STYLESHEET', 'SVGIMAGE'].map((name) => `SECRET-${name}-USER`))
  }, 120_000)
  test('later: no planted secret is sent but what README says is kept', async () => {
    sent.length = 0
    const tab = browser.page
    const origin = `http://127.0.0.1:${server.port}`
    await tab.goto(origin + '/later')
    await startTracker()
    await tab.evaluate(async () => {
      const $ = (id: string) => document.getElementById(id)!
      $('root').innerHTML = '<p title="SECRET-M-TITLE">SECRET-M-TEXT</p><input id="m-input" value="SECRET-M-VALUE"><select id="m-select"><option>SECRET-M-OPTION</option></select><textarea id="m-area">SECRET-M-AREA</textarea><input type="hidden" value="SECRET-M-HIDDEN"><a href="/m?email=SECRET-M-HREF&token=SECRET-M-HREFTOKEN">m</a>'
      $('link').setAttribute('href', '/x?email=SECRET-M-LINKATTR&token=SECRET-M-LINKTOKEN')
      ;($('img') as HTMLImageElement).src = '/img.png?token=SECRET-M-IMGTOKEN'
      $('styled').style.backgroundImage = "url('/img.png?token=SECRET-M-STYLETOKEN')"
      $('styled').setAttribute('aria-label', 'SECRET-M-ARIA')
      $('styled').setAttribute('placeholder', 'SECRET-M-PLACEHOLDER')
      ;($('sheet') as HTMLStyleElement).sheet!.insertRule(".x { background: url('/img.png?token=SECRET-M-RULETOKEN') }")
      $('sheet').textContent = ".y { background: url('/img.png?token=SECRET-M-SHEETTOKEN') }"
      const adopted = new CSSStyleSheet()
      adopted.replaceSync(".z { background: url('/img.png?token=SECRET-M-ADOPTEDTOKEN') }")
      document.adoptedStyleSheets = [adopted]
      $('meta').setAttribute('content', 'https://shop.example/?email=SECRET-M-METAURL&token=SECRET-M-METATOKEN')
      $('meta').setAttribute('name', 'csrf-token')
      $('canon').setAttribute('href', '/c?email=SECRET-M-CANON')
      const host = document.createElement('div')
      $('root').append(host)
      host.attachShadow({ mode: 'open' }).innerHTML = '<span>SECRET-M-SHADOWTEXT</span><input id="m-shadow-input">'
      ;($('frame') as HTMLIFrameElement).src = '/frame?token=SECRET-M-FRAMETOKEN'
      const text = document.createTextNode('SECRET-M-TEXTNODE')
      $('root').append(text)
      text.data = 'SECRET-M-CHARDATA'
      ;($('m-input') as HTMLInputElement).value = 'SECRET-M-PROP'
      document.title = 'SECRET-M-DOCTITLE'
    })
    await tab.waitForTimeout(500)
    await tab.locator('#m-shadow-input').pressSequentially('SECRET-M-SHADOWTYPED')
    await tab.frameLocator('#frame').locator('#frame-input').pressSequentially('SECRET-M-FRAMETYPED')
    await tab.locator('#m-area').pressSequentially('SECRET-M-AREATYPED')
    await leave()
    expect(markersSent()).toEqual([])
  }, 120_000)
  test('relative: no planted secret is sent but what README says is kept', async () => {
    sent.length = 0
    const tab = browser.page
    const origin = `http://127.0.0.1:${server.port}`
    await tab.goto(origin + '/relative?email=SECRET-REL-EMAIL&token=SECRET-REL-TOKEN#state=SECRET-REL-STATE')
    await startTracker()
    await leave()
    expect(markersSent()).toEqual([])
  }, 120_000)
})
