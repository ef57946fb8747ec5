import { afterEach, describe, expect, test } from 'bun:test'
import type { RedactionStrategy } from '@sightline/tracker'
import { HEARTBEAT_MS } from '@sightline/tracker/queue'
import { settle } from './helpers/clock'
import { closeAll, pageHide, replayEvents, tracked, type Tracked } from './helpers/tracker'

afterEach(closeAll)

/**
 * A page full of things to hide, driven through what a visitor does (typing, clicking, submitting,
 * editing, searching: what a form sent by GET puts into the page's URL, a parameter's value or a bare
 * word, which the page also names in its canonical link and Open Graph URL, and its logs and stack
 * frames name) while every kind of tracking runs; then every byte sent, fetch and beacon alike, is
 * searched for the hidden words.
 */
const PAGE_URL = 'http://shop.test/checkout?coupon=SECRET-QUERY&session_id=SECRET-SESSION&SECRET-BARE&utm_source=mail'
const PAGE = `<!doctype html><html><head><title>SECRET-TITLE</title>
  <link rel="canonical" href="${PAGE_URL.replaceAll('&', '&amp;')}"><link rel="alternate" hreflang="de" href="/de/checkout?coupon=SECRET-ALTERNATE">
  <meta property="og:url" content="${PAGE_URL.replaceAll('&', '&amp;')}"><meta name="twitter:url" content="http://shop.test/checkout?SECRET-TWITTER">
</head><body>
  <p id="para">SECRET-PARAGRAPH</p>
  <div class="public"><h1>VISIBLE-HEADING</h1><input id="public-input" value=""></div>
  <div class="private"><span>PRIVATE-DIV</span></div>
  <form id="checkout" action="/pay?token=ACTION-TOKEN">
    <input id="name" name="name" value="">
    <input id="pw" type="password" value="">
    <input id="card" autocomplete="cc-number" value="">
    <textarea id="notes"></textarea>
    <button id="pay">SECRET-BUTTON</button>
  </form>
  <div id="editable" contenteditable="true">SECRET-EDITABLE</div>
</body></html>`

async function visit(t: Tracked) {
  const { win, clock } = t
  const doc = win.document
  const type = (id: string, value: string) => {
    const input = doc.getElementById(id) as HTMLInputElement
    input.value = value
    input.dispatchEvent(new win.Event('input', { bubbles: true }))
    input.dispatchEvent(new win.Event('change', { bubbles: true }))
  }
  win.console.warn = () => {}
  t.tracker.start()
  await settle()
  win.history.pushState({}, '', '/checkout?coupon=SECRET-PUSHED&session_id=SECRET-SESSION')
  win.console.warn('coupon refused at ' + win.location.href)
  win.dispatchEvent(new win.ErrorEvent('error', { message: 'checkout failed' }))
  // An inline script's frames name the URL the page was loaded with, not the current one.
  t.tracker.captureError(Object.assign(new Error('pay failed'), { stack: `Error: pay failed\n    at pay (${PAGE_URL}:12:5)` }))
  type('name', 'SECRET-TYPED-NAME')
  type('pw', 'SECRET-PASSWORD')
  type('card', '4111111111111111')
  type('notes', 'SECRET-NOTES')
  type('public-input', 'VISIBLE-TYPED')
  doc.getElementById('pay')!.dispatchEvent(new win.MouseEvent('click', { bubbles: true }))
  doc.querySelector('.private span')!.dispatchEvent(new win.MouseEvent('click', { bubbles: true }))
  doc.getElementById('checkout')!.dispatchEvent(new win.Event('submit', { bubbles: true }))
  doc.getElementById('editable')!.textContent = 'SECRET-MUTATION'
  doc.getElementById('para')!.appendChild(doc.createTextNode(' SECRET-ADDED'))
  await settle()
  // Past a heartbeat, which says the URL too.
  await clock.advance(HEARTBEAT_MS)
  doc.getElementById('para')!.textContent = 'SECRET-AT-UNLOAD'
  await settle()
  pageHide(win)
  await t.service.beaconsRead()
  return t.service.sent.map((request) => request.text).join('\n')
}

describe('privacy-first (the default)', () => {
  test('no masked text in any payload; unredacted selectors show theirs', async () => {
    const t = tracked({ redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.public'] } }, { html: PAGE, url: PAGE_URL })
    const everything = await visit(t)
    for (const word of ['SECRET', 'PRIVATE-DIV', '4111111111111111']) expect(everything).not.toContain(word)
    expect(everything).toContain('utm_source=mail')
    expect(everything).toContain('at pay (http://shop.test/checkout?coupon=[redacted]&session_id=[redacted]&[redacted]&utm_source=mail:12:5)')
    // The recording did see the page: the unredacted part is there, and the masked text as stars.
    expect(everything).toContain('VISIBLE-HEADING')
    expect(everything).toContain('VISIBLE-TYPED')
    expect(everything).toContain('*'.repeat('SECRET-PARAGRAPH'.length))
    // Automatic events leave query strings out, as the replay does of the form's action.
    const submits = t.service.to('/customEvent/batch').flatMap((r) => r.body.events).filter((e: { eventName: string }) => e.eventName === '$form_submit')
    expect(submits[0].eventProperties).toEqual({ id: 'checkout', action: 'http://shop.test/pay', method: 'get', fields: 5 })
    const kinds = new Set(t.service.sent.map((r) => r.path))
    for (const kind of ['events', 'customEvent/batch', 'heartbeat', 'logs', 'errors']) expect(kinds).toContain('/api/ingestion/' + kind)
    const clicks = t.service.to('/customEvent/batch').flatMap((r) => r.body.events).filter((e: { eventName: string }) => e.eventName === '$click')
    expect(clicks.map((e: { eventProperties: object }) => e.eventProperties)).toEqual([
      { tag: 'button', id: 'pay', selector: 'button#pay' },
      { tag: 'span', selector: 'div.private > span' },
    ])
  })

  test('a password stays masked even inside an unredacted selector', async () => {
    const t = tracked({ redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['form', 'title'] } }, { html: PAGE, url: PAGE_URL })
    const everything = await visit(t)
    expect(everything).toContain('SECRET-TYPED-NAME')
    expect(everything).toContain('SECRET-TITLE')
    expect(everything).not.toContain('SECRET-PASSWORD')
    expect(everything).not.toContain('4111111111111111')
    expect(everything).not.toContain('SECRET-PARAGRAPH')
  })

  test('changed selectors take effect from the next full snapshot, which is taken at once', async () => {
    const t = tracked({ enableAutomaticTracking: false }, { html: '<p class="later">LATER-TEXT</p><p>OTHER-TEXT</p>' })
    t.tracker.start()
    await settle()
    t.win.document.querySelector('.later')!.appendChild(t.win.document.createTextNode(' BEFORE-CHANGE'))
    await settle()
    t.tracker.setUnredactedFields(['.later'])
    t.win.document.querySelector('.later')!.appendChild(t.win.document.createTextNode(' AFTER-CHANGE'))
    await settle()
    await t.clock.advance(3000)
    const events = replayEvents(t.service)
    const snapshots = events.map((e, i) => [e.type, i] as const).filter(([type]) => type === 2).map(([, i]) => i)
    expect(snapshots).toHaveLength(2)
    const before = JSON.stringify(events.slice(0, snapshots[1]))
    const after = JSON.stringify(events.slice(snapshots[1]))
    expect(before).not.toContain('LATER-TEXT')
    expect(before).not.toContain('BEFORE-CHANGE')
    expect(after).toContain('LATER-TEXT')
    expect(after).toContain('BEFORE-CHANGE')
    expect(after).toContain('AFTER-CHANGE')
    expect(JSON.stringify(events)).not.toContain('OTHER-TEXT')
  })
})

describe('text in attributes', () => {
  test("placeholders, titles, labels, alt text and the values of buttons, checkboxes and options are masked with their element", async () => {
    const html = `<div class="public"><input id="shown" placeholder="VISIBLE-PLACEHOLDER"></div>
      <input id="search" placeholder="SECRET-PLACEHOLDER" title="SECRET-TITLE" aria-label="SECRET-ARIA">
      <img alt="SECRET-ALT" src="/x.png">
      <select id="plan"><option value="SECRET-OPTION-VALUE" label="SECRET-OPTION-LABEL">a</option></select>
      <input type="submit" value="SECRET-SUBMIT">
      <input id="consent" type="checkbox" value="SECRET-CHECKBOX">`
    const t = tracked({ redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.public'] } }, { html })
    const doc = t.win.document
    t.tracker.start()
    await settle()
    // What changes later goes by mutation and input events.
    doc.getElementById('search')!.setAttribute('placeholder', 'SECRET-LATER-PLACEHOLDER')
    const option = doc.createElement('option')
    option.value = 'SECRET-ADDED-OPTION'
    doc.getElementById('plan')!.appendChild(option)
    const consent = doc.getElementById('consent') as HTMLInputElement
    consent.checked = true
    consent.dispatchEvent(new t.win.Event('change', { bubbles: true }))
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((request) => request.text).join('\n')
    expect(everything.match(/SECRET-[A-Z-]+/g)).toBeNull()
    expect(everything).toContain('VISIBLE-PLACEHOLDER')
    expect(everything).toContain('*'.repeat('SECRET-PLACEHOLDER'.length))
  })

  test("the other attributes that say what an element says are masked with it: a date, an abbreviation, braille and MathML labels, a custom control's value", async () => {
    // A time's datetime repeats its (masked) text in another form: a birthday, an appointment, an order's date.
    const html = `<p>Born <time id="born" datetime="1990-04-12">SECRET-TIME</time></p>
      <table><tr><th abbr="SECRET-ABBR">x</th></tr></table>
      <button aria-braillelabel="SECRET-BRAILLE" aria-brailleroledescription="SECRET-BRAILLE-ROLE">x</button>
      <math alttext="SECRET-MATH"><mi>x</mi></math>
      <div role="slider" aria-valuenow="1987" aria-valuemin="1900" aria-valuemax="2030">Year of birth</div>`
    const t = tracked({}, { html })
    t.tracker.start()
    await settle()
    t.win.document.getElementById('born')!.setAttribute('datetime', '1991-05-13')
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((request) => request.text).join('\n')
    // As JSON strings, the values an attribute holds: as bare digits, a random id could hold them.
    expect(everything.match(/SECRET-[A-Z-]+|"199\d-\d\d-\d\d"|"1987"/g)).toBeNull()
    expect(everything).toContain('*'.repeat('1990-04-12'.length))
  })

  test("a link's download attribute, the name its file is saved under, is masked with its text", async () => {
    const t = tracked({}, { html: '<a id="inv" href="/files/1.pdf" download="invoice-jane-doe.pdf">SECRET-LINK</a>' })
    t.tracker.start()
    await settle()
    t.win.document.getElementById('inv')!.setAttribute('download', 'invoice-john-roe.pdf')
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((request) => request.text).join('\n')
    expect(everything.match(/SECRET-[A-Z-]+|invoice-\w+-\w+/g)).toBeNull()
    expect(everything).toContain('*'.repeat('invoice-jane-doe.pdf'.length))
  })
})

describe('visibility-first', () => {
  test('only redactSelectors, passwords and card fields are masked', async () => {
    const t = tracked({ redactionStrategy: { mode: 'visibility-first', redactSelectors: ['.private', '#notes'] } }, { html: PAGE, url: PAGE_URL })
    const everything = await visit(t)
    for (const word of ['PRIVATE-DIV', 'SECRET-PASSWORD', '4111111111111111', 'SECRET-NOTES']) expect(everything).not.toContain(word)
    for (const word of ['SECRET-PARAGRAPH', 'SECRET-TYPED-NAME', 'SECRET-BUTTON', 'SECRET-MUTATION', 'VISIBLE-HEADING', 'SECRET-QUERY', 'SECRET-PUSHED']) expect(everything).toContain(word)
    const clicks = t.service.to('/customEvent/batch').flatMap((r) => r.body.events).filter((e: { eventName: string }) => e.eventName === '$click')
    expect(clicks.map((e: { eventProperties: { text?: string } }) => e.eventProperties.text)).toEqual(['SECRET-BUTTON', undefined])
  })

  test('a card field is one whatever its autocomplete says before the card token (billing, shipping, a section) or its case', async () => {
    const html = `<form><input id="a" autocomplete="billing cc-number"><input id="b" autocomplete="section-pay shipping cc-csc"><input id="c" autocomplete="CC-Exp" value="12/31"></form>`
    const t = tracked({ redactionStrategy: { mode: 'visibility-first' } }, { html })
    const doc = t.win.document
    t.tracker.start()
    await settle()
    for (const [id, value] of [['a', '4111111111111111'], ['b', '737']]) {
      const input = doc.getElementById(id) as HTMLInputElement
      input.value = value
      input.dispatchEvent(new t.win.Event('input', { bubbles: true }))
    }
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((r) => r.text).join('\n')
    // As JSON strings (a field's value is one whole): a random id could hold the digits 737.
    for (const value of ['4111111111111111', '737', '12/31']) expect(everything).not.toContain(JSON.stringify(value))
    expect(everything).toContain('*'.repeat(16))
  })

  test("a card select's options are masked when its autocomplete names billing, shipping or a section before the cc- token", async () => {
    const html = `<form><select id="m" autocomplete="billing cc-exp-month"><option value="MONTH-07">SECRET-JULY</option></select><select id="y" autocomplete="section-pay shipping cc-exp-year"><option>SECRET-2031</option></select></form>`
    const t = tracked({ redactionStrategy: { mode: 'visibility-first' } }, { html })
    t.tracker.start()
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((r) => r.text).join('\n')
    expect(everything).toContain('"type":2')
    expect(everything.match(/SECRET-[A-Z0-9-]+|MONTH-07/g)).toBeNull()
  })

  test('an element holding redacted text shows none of its text in automatic events', async () => {
    const t = tracked({ redactionStrategy: { mode: 'visibility-first', redactSelectors: ['.amount'] } }, { html: '<button id="b">Pay <span class="amount">HIDDEN-AMOUNT</span></button>' })
    t.tracker.start()
    await settle()
    t.win.document.getElementById('b')!.dispatchEvent(new t.win.MouseEvent('click', { bubbles: true }))
    await t.clock.advance(3000)
    const everything = t.service.sent.map((r) => r.text).join('\n')
    expect(everything).not.toContain('HIDDEN-AMOUNT')
    expect(everything).toContain('"tag":"button"')
  })
})

describe('a password shown by its "show password" button', () => {
  for (const strategy of [{ mode: 'visibility-first' }, { mode: 'privacy-first', unredactSelectors: ['form'] }] satisfies RedactionStrategy[]) {
    test(`${strategy.mode}: still masked once the page made it a text field, typed into then and in later snapshots`, async () => {
      const t = tracked({ enableAutomaticTracking: false, redactionStrategy: strategy }, { html: '<form><input id="pw" type="password" value=""><input id="name" value=""></form>' })
      const { win } = t
      const type = (id: string, value: string) => {
        const input = win.document.getElementById(id) as HTMLInputElement
        input.value = value
        input.dispatchEvent(new win.Event('input', { bubbles: true }))
      }
      t.tracker.start()
      await settle()
      type('pw', 'SECRET-HIDDEN-PASSWORD')
      ;(win.document.getElementById('pw') as HTMLInputElement).type = 'text'
      await settle()
      type('pw', 'SECRET-SHOWN-PASSWORD')
      type('name', 'VISIBLE-NAME')
      await settle()
      // A new snapshot (changed selectors) serializes the field as it is now.
      t.tracker.setUnredactedFields(['form'])
      await settle()
      await t.clock.advance(3000)
      const replay = JSON.stringify(replayEvents(t.service))
      expect(replay.match(/SECRET-[A-Z-]+/g)).toBeNull()
      expect(replay).toContain('VISIBLE-NAME')
      expect(replay).toContain('*'.repeat('SECRET-SHOWN-PASSWORD'.length))
    })
  }
})

describe('shadow roots and comments', () => {
  /** A custom element whose shadow root holds text of its own, bare (not inside any element) and in elements. */
  const SHADOW_PAGE = `<p class="public">VISIBLE-TEXT</p><!-- SECRET-COMMENT --><div id="host" class="card"></div>`
  async function shadowVisit(t: Tracked) {
    const doc = t.win.document
    const root = doc.getElementById('host')!.attachShadow({ mode: 'open' })
    root.innerHTML = 'SECRET-BARE <b>SECRET-IN-ELEMENT</b><input value="SECRET-INPUT">'
    t.tracker.start()
    await settle()
    // Later: bare text added to the root, and a bare text node's data changed.
    root.append('SECRET-APPENDED')
    ;(root.firstChild as Text).data = 'SECRET-DATA'
    doc.body.append(doc.createComment('SECRET-LATER-COMMENT'))
    await settle()
    await t.clock.advance(3000)
    return t.service.sent.map((request) => request.text).join('\n')
  }

  test('privacy-first masks text directly in a shadow root, and sends no comment', async () => {
    const everything = await shadowVisit(tracked({ enableAutomaticTracking: false, redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.public'] } }, { html: SHADOW_PAGE }))
    expect(everything.match(/SECRET-[A-Z-]+/g)).toBeNull()
    expect(everything).toContain('VISIBLE-TEXT')
    expect(everything).toContain('*'.repeat('SECRET-APPENDED'.length))
  })

  test('visibility-first: a redact selector on a shadow host masks everything in its shadow root', async () => {
    const everything = await shadowVisit(tracked({ enableAutomaticTracking: false, redactionStrategy: { mode: 'visibility-first', redactSelectors: ['.card'] } }, { html: SHADOW_PAGE }))
    expect(everything.match(/SECRET-[A-Z-]+/g)).toBeNull()
    expect(everything).toContain('VISIBLE-TEXT')
    expect(everything).toContain('*'.repeat('SECRET-IN-ELEMENT'.length))
  })

  test('privacy-first: an unredacted shadow host shows its shadow root, passwords still masked', async () => {
    const t = tracked({ enableAutomaticTracking: false, redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['.card'] } }, { html: '<div id="host" class="card"></div>' })
    const root = t.win.document.getElementById('host')!.attachShadow({ mode: 'open' })
    root.innerHTML = 'SHOWN-BARE <b>SHOWN-IN-ELEMENT</b><input type="password" value="SECRET-PASSWORD">'
    t.tracker.start()
    await settle()
    await t.clock.advance(3000)
    const everything = t.service.sent.map((request) => request.text).join('\n')
    expect(everything).toContain('SHOWN-BARE')
    expect(everything).toContain('SHOWN-IN-ELEMENT')
    expect(everything).not.toContain('SECRET-PASSWORD')
  })
})
