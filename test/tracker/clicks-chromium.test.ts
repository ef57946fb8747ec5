import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage, startTracker } from './helpers/chromium'

/** What describing a click costs in headless Chromium, with t.js as built, on a page of many rows. */

const ROWS = 20_000
const CLICKS = 20

const page = `<!doctype html><html><head><title>Orders</title></head><body style="margin:0">
  <button id="buy">Buy <b>now</b></button>
  <main>${Array.from({ length: ROWS }, (_, i) => `<div class="row">Order ${i}: two boxes of tea, shipped</div>`).join('')}</main>
  <script src="/t.js"></script></body></html>`
const chromium = chromiumSite(() => htmlPage(page))

/** Milliseconds per click on the page background (the body), and per `innerText` of the body, timed side by side. */
const timeClicks = () =>
  chromium.browser.page.evaluate((clicks) => {
    const each = (run: () => unknown) => {
      const start = performance.now()
      for (let i = 0; i < clicks; i++) run()
      return (performance.now() - start) / clicks
    }
    const click = () => document.body.dispatchEvent(new MouseEvent('click', { bubbles: true, clientX: 5, clientY: 400 }))
    click()
    return { click: each(click), innerText: each(() => document.body.innerText) }
  }, CLICKS)

describe('clicks in Chromium', () => {
  test('visibility-first: a click on the background of a page of 20,000 rows costs a small fraction of one innerText of it, and sends no text; a button still says its text', async () => {
    const { browser, site, sends } = chromium
    sends.length = 0
    await browser.page.goto(site.url + '/')
    const without = await timeClicks()
    await startTracker(browser.page, 'sl_dev_clicks', { redactionStrategy: { mode: 'visibility-first' } })
    await browser.page.waitForTimeout(300)
    const tracked = await timeClicks()
    // Relative to an innerText timed beside it, so a busy machine slows both: the tracker's share of a
    // click is a small fraction of one read of the body's text (it used to read it all, and more, on
    // every click: about three times an innerText).
    expect(tracked.click - without.click).toBeLessThan(tracked.innerText / 5)
    await browser.page.click('#buy')
    await browser.page.waitForTimeout(1300)
    const clicks = sends.filter((r) => r.path === '/customEvent/batch').flatMap((r) => r.body.events).filter((e: any) => e.eventName === '$click')
    expect(clicks.at(0).eventProperties).toEqual({ tag: 'body', selector: '' })
    expect(clicks.at(-1).eventProperties).toEqual({ tag: 'button', id: 'buy', selector: 'button#buy', text: 'Buy now' })
  }, 60_000)
})
