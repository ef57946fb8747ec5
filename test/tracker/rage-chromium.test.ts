import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage, startTracker, type Tab } from './helpers/chromium'

/** Rage clicks in headless Chromium, with t.js as built: a person's clicks (trusted) against a script's. */

const page = `<!doctype html><html><head><title>Pay</title></head><body>
  <button id="pay" style="position:absolute;left:20px;top:20px;width:120px;height:40px">Pay</button>
  <script src="/t.js"></script></body></html>`

const chromium = chromiumSite(() => htmlPage(page))

/** The automatic click events sent after `act` clicked, each as [name, element id]. */
async function clicksAfter(act: (tab: Tab) => Promise<unknown>) {
  const tab = chromium.browser.page
  await tab.goto(chromium.site.url + '/')
  await startTracker(tab, 'sl_dev_rage', { redactionStrategy: { mode: 'visibility-first' } })
  await tab.waitForTimeout(300)
  chromium.sends.length = 0
  await act(tab)
  await tab.goto('about:blank')
  await Bun.sleep(300)
  return chromium.sends
    .filter((r) => r.path === '/customEvent/batch')
    .flatMap((r) => r.body.events)
    .filter((e: { eventName: string }) => e.eventName === '$click' || e.eventName === '$rageclick')
    .map((e: { eventName: string; eventProperties: { id?: string } }) => [e.eventName, e.eventProperties.id])
}

describe('rage clicks in Chromium', () => {
  test("three clicks of a person's within a second are a rage click", async () => {
    const sent = await clicksAfter(async (tab) => {
      for (let i = 0; i < 3; i++) await tab.mouse.click(60, 40)
    })
    expect(sent).toEqual([['$click', 'pay'], ['$click', 'pay'], ['$click', 'pay'], ['$rageclick', 'pay']])
  }, 60_000)

  test("three clicks made by the page's script (el.click(), a dispatched MouseEvent) are clicks, never a rage click; nor do they make a person's clicks one", async () => {
    const sent = await clicksAfter(async (tab) => {
      await tab.evaluate(() => {
        const pay = document.getElementById('pay')!
        for (let i = 0; i < 3; i++) pay.click()
        for (let i = 0; i < 3; i++) pay.dispatchEvent(new MouseEvent('click', { bubbles: true, clientX: 60, clientY: 40 }))
      })
      // Two of a person's among them: two, not three.
      await tab.mouse.click(60, 40)
      await tab.evaluate(() => document.getElementById('pay')!.click())
      await tab.mouse.click(60, 40)
    })
    expect(sent).toEqual(Array.from({ length: 9 }, () => ['$click', 'pay']))
  }, 60_000)

  test('three clicks of the keyboard within a second (Enter on a focused button, as a held key repeats it) are clicks, never a rage click', async () => {
    const sent = await clicksAfter(async (tab) => {
      await tab.focus('#pay')
      for (let i = 0; i < 3; i++) await tab.keyboard.press('Enter')
    })
    expect(sent).toEqual(Array.from({ length: 3 }, () => ['$click', 'pay']))
  }, 60_000)
})
