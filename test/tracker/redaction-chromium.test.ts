import { describe, expect, test } from 'bun:test'
import type { RedactionStrategy } from '@sightline/tracker'
import { chromiumSite, htmlPage, logOutAndLeave, startTracker, type Tab } from './helpers/chromium'

/**
 * Redaction in headless Chromium, with t.js as built: what only a real browser's selectors, form
 * controls and SVG show. Every body the tracker sent is searched for the SECRET-… words.
 */

let page = ''
const chromium = chromiumSite(() => htmlPage(page))

/**
 * Opens `html`, lets `before` act on it before the tracker starts, starts it with `strategy`, lets
 * `after` act, takes a new full snapshot (a new session), leaves, and answers the SECRET-… words sent
 * and all that was sent, as text.
 */
async function secretsSent(html: string, strategy: RedactionStrategy, before: (tab: Tab) => Promise<unknown>, after: (tab: Tab) => Promise<unknown>) {
  page = `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body>${html}<script src="/t.js"></script></body></html>`
  chromium.sends.length = 0
  const tab = chromium.browser.page
  await tab.goto(chromium.site.url + '/')
  await before(tab)
  await startTracker(tab, 'sl_dev_redaction', { logLevel: 'none', redactionStrategy: strategy })
  await tab.waitForTimeout(300)
  await after(tab)
  await logOutAndLeave(chromium)
  const everything = JSON.stringify(chromium.sends)
  return { sent: [...new Set(everything.match(/SECRET-[A-Z0-9-]+/g))].sort(), everything }
}

describe('redaction in Chromium', () => {
  test("visibility-first: a card select's options, text and values, are masked whatever the case of its autocomplete (\"shipping CC-EXP-MONTH\")", async () => {
    const { sent, everything } = await secretsSent(
      `<select id="month" autocomplete="shipping CC-EXP-MONTH"><option value="SECRET-VALUE-01">SECRET-TEXT-01</option><option value="SECRET-VALUE-02">SECRET-TEXT-02</option></select>
       <input id="number" autocomplete="CC-NUMBER" value="">`,
      { mode: 'visibility-first' },
      async () => {},
      async (tab) => {
        await tab.selectOption('#month', 'SECRET-VALUE-02')
        await tab.locator('#number').pressSequentially('SECRET-NUMBER')
        await tab.evaluate(() => document.getElementById('month')!.append(new Option('SECRET-TEXT-ADDED', 'SECRET-VALUE-ADDED')))
      },
    )
    expect(sent).toEqual([])
    // Recorded, as stars: the options' text, and what was typed.
    expect(everything).toContain('"' + '*'.repeat('SECRET-TEXT-02'.length) + '"')
    expect(everything).toContain('"' + '*'.repeat('SECRET-NUMBER'.length) + '"')
  }, 60_000)

  for (const mode of ['visibility-first', 'privacy-first'] as const) {
    test(`${mode}: a password field a "show password" button made a text field before recording began (autocomplete current-password, new-password) stays masked`, async () => {
      const { sent, everything } = await secretsSent(
        `<input id="current" type="password" autocomplete="current-password"><input id="new" type="password" autocomplete="section-signup New-Password">
         <button id="show" onclick="current.type = 'text'; document.getElementById('new').type = 'text'">show</button>`,
        { mode, unredactSelectors: ['body'] },
        async (tab) => {
          await tab.locator('#current').pressSequentially('SECRET-TYPED-BEFORE')
          await tab.locator('#new').pressSequentially('SECRET-NEW-BEFORE')
          await tab.click('#show')
        },
        async (tab) => {
          await tab.locator('#current').pressSequentially('SECRET-TYPED-AFTER')
          await tab.locator('#new').pressSequentially('SECRET-NEW-AFTER')
        },
      )
      expect(sent).toEqual([])
      // The snapshot after it holds the whole value, as stars.
      expect(everything).toContain('"' + '*'.repeat('SECRET-TYPED-BEFORESECRET-TYPED-AFTER'.length) + '"')
    }, 60_000)
  }

  test('visibility-first: a one-time code (autocomplete one-time-code, in any case) and the name of a file chosen in a file input are masked, as passwords are', async () => {
    const { sent, everything } = await secretsSent(
      `<input id="otp" autocomplete="One-Time-Code" inputmode="numeric"><input id="file" type="file">`,
      { mode: 'visibility-first' },
      async (tab) => {
        await tab.locator('#otp').pressSequentially('SECRET-OTP-BEFORE')
        await tab.setInputFiles('#file', { name: 'SECRET-FILE-BEFORE.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF') })
      },
      async (tab) => {
        await tab.locator('#otp').pressSequentially('SECRET-OTP-AFTER')
        await tab.setInputFiles('#file', { name: 'SECRET-FILE-AFTER.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF') })
      },
    )
    expect(sent).toEqual([])
    // Recorded, as stars: the code typed before recording began, in the snapshot, then all of it.
    expect(everything).toContain('"' + '*'.repeat('SECRET-OTP-BEFORE'.length) + '"')
    expect(everything).toContain('"' + '*'.repeat('SECRET-OTP-BEFORESECRET-OTP-AFTER'.length) + '"')
  }, 60_000)

  test("privacy-first: an SVG link's xlink:title, its tooltip, is masked like a title", async () => {
    const { sent, everything } = await secretsSent(
      `<svg width="100" height="20"><a id="link" xlink:title="SECRET-TOOLTIP" href="#x"><text x="0" y="15">x</text></a></svg>`,
      { mode: 'privacy-first' },
      async () => {},
      async (tab) => tab.evaluate(() => document.getElementById('link')!.setAttributeNS('http://www.w3.org/1999/xlink', 'xlink:title', 'SECRET-TOOLTIP-CHANGED')),
    )
    expect(sent).toEqual([])
    expect(everything).toContain('"xlink:title":"' + '*'.repeat('SECRET-TOOLTIP'.length) + '"')
  }, 60_000)
})
