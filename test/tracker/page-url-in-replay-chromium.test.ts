import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage, logOutAndLeave, startTracker } from './helpers/chromium'

/**
 * In privacy-first mode the page's URL goes with its parameters' values redacted: a search sent by GET
 * puts what was typed there. A reference to the page itself (`<img src="#">`, a placeholder until a
 * script sets the image; `<iframe src="#">`, `<object data="#icon">`) resolves to that URL, query and
 * all, and the recorder writes attributes absolute: there it must go redacted too.
 */

let page = ''
const chromium = chromiumSite(() => htmlPage(page))

describe("the page's own URL in the replay's attributes", () => {
  test('privacy-first: an img, iframe, object or srcset naming the page itself ("#") sends the page URL without its values, in the snapshot and added later', async () => {
    page = `<!doctype html><html><head><meta charset="utf-8"><title>results</title></head><body>
      <img id="placeholder" src="#"><iframe src="#"></iframe><object data="#icon"></object><img srcset="#x 1x">
      <div id="later"></div><script src="/t.js"></script></body></html>`
    chromium.sends.length = 0
    const tab = chromium.browser.page
    await tab.goto(chromium.site.url + '/search?q=SECRET-SEARCHED&email=SECRET-EMAIL&utm_source=newsletter')
    await startTracker(tab, 'sl_dev_page_url', { logLevel: 'none' })
    await tab.waitForTimeout(300)
    await tab.evaluate(() => {
      document.getElementById('later')!.innerHTML = '<img src="#added">'
      document.getElementById('placeholder')!.setAttribute('src', '#changed')
    })
    await tab.waitForTimeout(300)
    await logOutAndLeave(chromium)
    const replay = JSON.stringify(chromium.sends.filter((send) => send.path === '/events'))
    expect([...new Set(replay.match(/SECRET-[A-Z0-9-]+/g))]).toEqual([])
    // Still the page's URL, with its parameters' names and a campaign's value, as page views send it.
    const redacted = `${chromium.site.url}/search?q=[redacted]&email=[redacted]&utm_source=newsletter`
    for (const fragment of ['#', '#icon', '#x 1x', '#added', '#changed']) expect(replay).toContain(JSON.stringify(redacted + fragment))
  }, 60_000)
})
