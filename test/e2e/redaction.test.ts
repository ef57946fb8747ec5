import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Page } from 'playwright-core'
import type { RedactionStrategy } from '@sightline/tracker'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { coreRequests, decodeHanded, missing, perKind, produced, stored, storedTextContaining } from './delivery'
import { e2eSuite } from './suite'

/**
 * Redaction in a real browser, where shadow DOM, frames, editing and the form controls are the
 * browser's own. A page hides words in every place text can be: under `.private` the SECRET-… words,
 * outside it VISIBLE-… words, under `.public` PUBLIC-… words. Privacy-first (`.public` unredacted)
 * may show only PUBLIC; visibility-first (`.private` redacted) anything but SECRET. Every body the
 * tracker handed to the browser, and every row core stored, is searched.
 */

const suite = e2eSuite()
const open = closedAfterEach()

/** Typed or set digits and dates are secrets too (a number input takes nothing else). */
const SECRET_VALUES = ['271828182845', '314159265358', '2029-11-23', '2031-12-25']
const WORDS = /(SECRET|VISIBLE|PUBLIC)-[A-Z0-9-]+/g

/** A custom element rendering text of its own in its shadow root: bare, in an element, in an input. */
const CARD = `customElements.define('x-card', class extends HTMLElement {
  connectedCallback() {
    if (roots[this.id]) return
    const root = (roots[this.id] = this.attachShadow({ mode: this.getAttribute('mode') || 'open' }))
    const word = this.getAttribute('word') + '-' + this.id.toUpperCase()
    root.innerHTML = word + '-BARE <b>' + word + '-B</b><input value="' + word + '-INPUT"><slot></slot>'
  }
})`

const PAGE = (key: string, core: string, strategy: RedactionStrategy) => `<!doctype html><html><head><meta charset="utf-8"><title>VISIBLE-TITLE</title>
<script src="/t.js"></script>
<script>
  const roots = (window.roots = {})
  ${CARD}
  window.tracker = ServiceTracker.init(${JSON.stringify(key)}, { ingestionUrl: ${JSON.stringify(core)}, logLevel: 'none', redactionStrategy: ${JSON.stringify(strategy)} })
  window.tracker.start()
</script>
</head><body>
  <!-- SECRET-COMMENT -->
  <p class="public">PUBLIC-PARAGRAPH</p>
  <p>VISIBLE-PARAGRAPH <input id="visible" value=""></p>
  <x-card id="shown" word="PUBLIC" class="public"></x-card>
  <x-card id="plain" word="VISIBLE"></x-card>
  <section class="private"><div>
    <p id="para">SECRET-PARAGRAPH</p>
    <form id="form" onsubmit="event.preventDefault()">
      <input id="email" type="email" value="SECRET-EMAIL@x.test">
      <input id="number" type="number" value="271828182845">
      <input id="tel" type="tel" value="SECRET-TEL">
      <input id="date" type="date" value="2029-11-23">
      <input id="search" type="search" value="SECRET-SEARCH">
      <input id="hidden" type="hidden" value="SECRET-HIDDEN">
      <input id="text" value="">
      <input id="range" value="">
      <textarea id="ta">SECRET-TEXTAREA</textarea>
      <select id="plan"><option value="SECRET-OPTION-A">SECRET-OPTION-TEXT-A</option><option value="SECRET-OPTION-B">SECRET-OPTION-TEXT-B</option></select>
      <button id="submit">SECRET-BUTTON</button>
    </form>
    <div id="editable" contenteditable="true">SECRET-EDITABLE</div>
    <svg width="100" height="20"><title>SECRET-SVG-TITLE</title><text x="0" y="15">SECRET-SVG-TEXT</text></svg>
    <noscript>SECRET-NOSCRIPT</noscript>
    <template id="tpl"><p>SECRET-TEMPLATE</p></template>
    <dialog id="dialog">SECRET-DIALOG</dialog>
    <div id="popover" popover>SECRET-POPOVER</div>
    <div id="mutations"><span id="m1">x</span><span id="m2">y</span><span id="m3">z</span></div>
  </div></section>
  <x-card id="open" word="SECRET" class="private"><span>SECRET-SLOTTED</span></x-card>
  <x-card id="closed" word="SECRET" mode="closed" class="private"></x-card>
  <x-card id="empty" word="SECRET" class="private"></x-card>
  <iframe id="frame" src="/frame.html"></iframe>
  <iframe id="srcdoc" class="private" srcdoc="<p>SECRET-SRCDOC</p><input id=di><iframe id=deep src='/deep.html'></iframe>"></iframe>
</body></html>`

/** A same-origin frame with a frame inside: the `.private` rules of their own documents apply there. */
const FRAME = `<!doctype html><html><body>
  <div class="private"><p>SECRET-FRAME</p><input id="fi" value="SECRET-FRAME-INPUT"></div>
  <p class="public">PUBLIC-FRAME</p><p>VISIBLE-FRAME</p>
  <iframe id="nested" src="/nested.html"></iframe>
</body></html>`
const NESTED = `<!doctype html><html><body><div class="private"><p>SECRET-NESTED</p><input id="ni"></div><p>VISIBLE-NESTED</p></body></html>`
/** Two frames deep inside the `.private` srcdoc frame, with no mark of its own. */
const DEEP = `<!doctype html><html><body><p>SECRET-DEEP</p><input id="deep-input" value="SECRET-DEEP-INPUT"></body></html>`

/** Another page of the site showing the tracked page in a frame, inside what the page unredacts. */
const EMBED = `<!doctype html><html><body><div class="public"><iframe id="tracked" src="/"></iframe></div></body></html>`

function serve(html: string) {
  const pages: Record<string, string> = { '/frame.html': FRAME, '/nested.html': NESTED, '/deep.html': DEEP }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const { pathname } = new URL(request.url)
      // Where the test reads what the tracker handed over (see browser.ts): a page without the tracker.
      if (pathname === '/__handed') return new Response('')
      if (pathname === '/embed') return new Response(EMBED, { headers: { 'content-type': 'text/html; charset=utf-8' } })
      if (pathname === '/t.js') return new Response(Bun.file(suite.script), { headers: { 'content-type': 'text/javascript' } })
      return new Response(pages[pathname] ?? html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, close: () => void server.stop(true) }
}

/** What a visitor and the page's own scripts do: typing everywhere, choosing, clicking, and changing the page. */
async function visit(page: Page) {
  const frame = page.frameLocator('#frame')
  await page.locator('#visible').pressSequentially('VISIBLE-TYPED')
  await page.locator('#text').pressSequentially('SECRET-TYPED')
  await page.locator('#email').fill('SECRET-TYPED-EMAIL@x.test')
  await page.locator('#tel').pressSequentially('SECRET-TYPED-TEL')
  await page.locator('#search').fill('SECRET-TYPED-SEARCH')
  await page.locator('#number').fill('314159265358')
  await page.locator('#date').fill('2031-12-25')
  await page.locator('#ta').pressSequentially('SECRET-TYPED-TEXTAREA')
  await page.selectOption('#plan', 'SECRET-OPTION-B')
  await page.locator('#editable').click()
  await page.keyboard.type('SECRET-TYPED-EDITABLE')
  await page.locator('#open input').pressSequentially('SECRET-TYPED-SHADOW')
  await frame.locator('#fi').pressSequentially('SECRET-TYPED-FRAME')
  await frame.frameLocator('#nested').locator('#ni').pressSequentially('SECRET-TYPED-NESTED')
  await page.frameLocator('#srcdoc').locator('#di').pressSequentially('SECRET-TYPED-SRCDOC')
  await page.frameLocator('#srcdoc').frameLocator('#deep').locator('#deep-input').fill('SECRET-TYPED-DEEP')
  await page.evaluate(() => {
    const byId = (id: string, doc = document) => doc.getElementById(id) as HTMLInputElement & HTMLDialogElement & HTMLIFrameElement
    const roots = (window as unknown as { roots: Record<string, ShadowRoot> }).roots
    // Values set by script, and by an autofill-like setRangeText.
    byId('text').value = 'SECRET-SCRIPT-VALUE'
    byId('hidden').value = 'SECRET-SCRIPT-HIDDEN'
    byId('range').setRangeText('SECRET-RANGE-TEXT')
    byId('range').dispatchEvent(new Event('input', { bubbles: true }))
    roots.closed.querySelector('input')!.value = 'SECRET-SCRIPT-CLOSED'
    roots.open.querySelector('input')!.value = 'SECRET-SCRIPT-SHADOW'
    // Text changed in shadow roots: bare text appended, a bare text node's data, a root's textContent.
    roots.open.append('SECRET-SHADOW-APPENDED')
    ;(roots.open.firstChild as Text).data = 'SECRET-SHADOW-DATA'
    roots.empty.textContent = 'SECRET-SHADOW-TEXTCONTENT'
    ;(roots.plain.firstChild as Text).data = 'VISIBLE-SHADOW-DATA'
    const later = Object.assign(document.createElement('x-card'), { id: 'later', className: 'private' })
    later.setAttribute('word', 'SECRET')
    document.body.append(later)
    // Text changed in the page: every way of writing it.
    byId('m1').textContent = 'SECRET-MUT-TEXTCONTENT'
    byId('m2').innerHTML = '<i>SECRET-MUT-INNERHTML</i>'
    byId('m3').insertAdjacentHTML('beforeend', '<u>SECRET-MUT-ADJACENT</u>')
    const text = byId('para').firstChild as Text
    text.data = 'SECRET-MUT-DATA'
    text.splitText(6)
    text.appendData('SECRET-MUT-APPEND')
    byId('mutations').append('SECRET-MUT-BARE', document.createComment('SECRET-MUT-COMMENT'))
    document.title = 'VISIBLE-TITLE-CHANGED'
    byId('dialog').showModal()
    byId('dialog').append('SECRET-DIALOG-ADDED')
    byId('dialog').close()
    byId('popover').showPopover()
    byId('popover').textContent = 'SECRET-POPOVER-ADDED'
    ;(byId('tpl') as unknown as HTMLTemplateElement).content.append('SECRET-TEMPLATE-ADDED')
    const frameDoc = byId('frame').contentDocument!
    frameDoc.querySelector('.private p')!.textContent = 'SECRET-FRAME-CHANGED'
    byId('nested', frameDoc).contentDocument!.querySelector('.private')!.append('SECRET-NESTED-ADDED')
    byId('deep', byId('srcdoc').contentDocument!).contentDocument!.body.append('SECRET-DEEP-ADDED')
    history.pushState({}, '', '/next')
  })
  // Automatic events: clicks (text and selector), a form submit, page views (title); and the app's own.
  await page.click('#submit')
  await page.click('#open b')
  await page.click('#para')
  await page.evaluate(() => {
    const tracker = (window as unknown as { tracker: { customEvent(name: string, properties: object): void; captureError(error: Error): void } }).tracker
    tracker.customEvent('checked_out', { items: 2 })
    tracker.captureError(new Error('the app reports this itself'))
  })
}

/** The visit, then everything handed to the browser and everything core stored, as text. */
async function visitAndCollect(strategy: RedactionStrategy) {
  const site = open(serve(PAGE(suite.e2e.core.key, suite.e2e.base, strategy)))
  const browser = open(await openBrowser())
  const { page } = browser
  await page.goto(`${site.url}/`)
  await page.waitForFunction(() => 'tracker' in window)
  await visit(page)
  // Leaving sends what is left, by beacon.
  await page.goto('about:blank')
  const handed = await browser.handed(site.url)
  const sent = produced(handed)
  expect(sent.sessions).toHaveLength(1)
  await eventually(async () => expect(missing(sent.ledger, await stored(suite.e2e, sent.sessions, coreRequests(suite.coreLog.lines)))).toEqual(perKind(() => [])))
  const [sessionId] = sent.sessions
  const storedRows = [
    JSON.stringify(await suite.e2e.replay(sessionId)),
    JSON.stringify(await suite.e2e.rows(sql`select * from events where session_id = ${sessionId}`)),
    JSON.stringify(await suite.e2e.rows(sql`select * from error_events where session_id = ${sessionId}`)),
  ].join('\n')
  const bodies = handed.map(decodeHanded)
  const everything = bodies.map((body) => body.text).join('\n')
  const words = (text: string) => [...new Set(text.match(WORDS))].sort()
  const events: { eventName: string; eventProperties?: Record<string, unknown> }[] = bodies.filter((b) => b.path === '/customEvent/batch').flatMap((b) => b.body.events)
  return { everything, sent: words(everything), stored: words(storedRows), events }
}

describe('redaction in headless Chromium: shadow DOM, frames, editing, form controls, changes by script', () => {
  test('privacy-first: nothing but the unredacted selectors reaches any payload or any stored row', async () => {
    const { everything, sent, stored: kept, events } = await visitAndCollect({ mode: 'privacy-first', unredactSelectors: ['.public'] })
    // PUBLIC only: the unredacted paragraph, the frame's, and an unredacted shadow host's whole root.
    expect(sent).toEqual(['PUBLIC-FRAME', 'PUBLIC-PARAGRAPH', 'PUBLIC-SHOWN-B', 'PUBLIC-SHOWN-BARE', 'PUBLIC-SHOWN-INPUT'])
    expect(kept).toEqual(sent)
    for (const value of SECRET_VALUES) expect(everything).not.toContain(value)
    // The masked text was recorded (as stars), not missed: the bare shadow text changed by script.
    expect(everything).toContain('*'.repeat('VISIBLE-SHADOW-DATA'.length))
    // Automatic events carry no masked text: clicks without it, page views without the title.
    expect(events.filter((e) => e.eventName === '$click').every((e) => e.eventProperties?.text === undefined)).toBe(true)
    expect(events.filter((e) => e.eventName === '$pageview').map((e) => e.eventProperties?.title)).toEqual([undefined, undefined])
    expect(await storedTextContaining(suite.e2e, ['secret-', ...SECRET_VALUES])).toEqual([])
  })

  test('visibility-first: a redact selector covers nested elements, shadow hosts and iframes, at every depth', async () => {
    const { everything, sent, stored: kept, events } = await visitAndCollect({ mode: 'visibility-first', redactSelectors: ['.private'] })
    expect(sent.filter((word) => word.startsWith('SECRET'))).toEqual([])
    for (const value of SECRET_VALUES) expect(everything).not.toContain(value)
    // What is outside `.private` is there: typed, in a shadow root, in the frames, the page's title.
    for (const word of ['VISIBLE-TYPED', 'VISIBLE-PARAGRAPH', 'VISIBLE-PLAIN-BARE', 'VISIBLE-SHADOW-DATA', 'VISIBLE-FRAME', 'VISIBLE-NESTED', 'VISIBLE-TITLE-CHANGED']) expect(sent).toContain(word)
    expect(kept).toEqual(sent)
    // Clicks name the element, with its text only where none of it is redacted; the title is shown.
    expect(events.filter((e) => e.eventName === '$click').map((e) => e.eventProperties)).toEqual([
      { tag: 'div', id: 'editable', selector: 'div#editable' },
      { tag: 'button', id: 'submit', selector: 'button#submit' },
      { tag: 'b', selector: 'x-card#open.private > b' },
      { tag: 'p', id: 'para', selector: 'p#para' },
    ])
    expect(events.filter((e) => e.eventName === '$pageview').map((e) => e.eventProperties?.title)).toEqual(['VISIBLE-TITLE', 'VISIBLE-TITLE-CHANGED'])
    expect(await storedTextContaining(suite.e2e, ['secret-', ...SECRET_VALUES])).toEqual([])
  })

  test("privacy-first in a frame: the embedding page's markup unredacts nothing of the tracked page", async () => {
    const site = open(serve(PAGE(suite.e2e.core.key, suite.e2e.base, { mode: 'privacy-first', unredactSelectors: ['.public'] })))
    const browser = open(await openBrowser())
    await browser.page.goto(`${site.url}/embed`)
    const tracked = browser.page.frame({ url: `${site.url}/` })!
    await tracked.waitForFunction(() => 'tracker' in window)
    await tracked.locator('#text').pressSequentially('SECRET-TYPED')
    await browser.page.goto('about:blank')
    const everything = (await browser.handed(site.url)).map((request) => decodeHanded(request).text).join('\n')
    expect([...new Set(everything.match(WORDS))].sort()).toEqual(['PUBLIC-FRAME', 'PUBLIC-PARAGRAPH', 'PUBLIC-SHOWN-B', 'PUBLIC-SHOWN-BARE', 'PUBLIC-SHOWN-INPUT'])
  })
})
