import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage } from './helpers/chromium'
import { CLICK, CUSTOM, FULL_SNAPSHOT, INCREMENTAL, META, MOUSE_DOWN, MOUSE_INTERACTION, type RecordedEvent } from './helpers/rrweb'

/**
 * The order rrweb really emits in, in headless Chromium with t.js as built: a session's replay in a
 * window begins with meta and full snapshot, both at the first start and when a person's click after
 * 30 idle minutes begins a new session (the click comes before the snapshot it causes).
 */

const PAGE = `<!doctype html>
<html><head><title>Sock shop</title></head>
<body>
  <button id="add">Add to cart</button>
  <p id="cart">empty</p>
  <script>document.getElementById('add').addEventListener('click', () => (document.getElementById('cart').textContent = 'one pair of wool socks'))</script>
  <script src="/t.js"></script>
</body></html>`

const chromium = chromiumSite(() => htmlPage(PAGE))

/** Every replay chunk the site received. */
const chunks = (): { sessionId: string; seq: number; events: RecordedEvent[] }[] => chromium.sends.filter(({ path }) => path === '/events').map(({ body }) => body)

/** A session's replay, chunk by chunk in `seq` order. */
const replayOf = (sessionId: string) =>
  chunks()
    .filter((chunk) => chunk.sessionId === sessionId)
    .sort((a, b) => a.seq - b.seq)
    .flatMap((chunk) => chunk.events)

declare const ServiceTracker: typeof import('@sightline/tracker').ServiceTracker
declare global {
  interface Window {
    tracker: import('@sightline/tracker').ServiceTracker
  }
}

describe('the replay of a window begins with its full snapshot, in headless Chromium', () => {
  test('an event added at start, and the click that begins a session after 30 idle minutes, go after their full snapshot', async () => {
    const { browser, site } = chromium
    const { page } = browser
    await page.goto(site.url + '/')
    const first = await page.evaluate(() => {
      window.tracker = ServiceTracker.init('sl_dev_replay_start', {
        ingestionUrl: location.origin,
        redactionStrategy: { mode: 'privacy-first', unredactSelectors: ['#cart'] },
      })
      window.tracker.start()
      window.tracker.addEvent({ step: 'started' })
      return window.tracker.getSessionId()
    })
    // Half an hour without activity, as it leaves the session kept in localStorage.
    await page.evaluate(() => {
      const session = JSON.parse(localStorage.getItem('sl_session')!)
      localStorage.setItem('sl_session', JSON.stringify({ ...session, last: Date.now() - 31 * 60_000 }))
    })
    await page.click('#add')
    await page.waitForTimeout(300)
    const second = await page.evaluate(() => {
      const sessionId = window.tracker.getSessionId()
      window.tracker.stop()
      return sessionId
    })
    expect(second).not.toBe(first)
    for (let i = 0; i < 200 && !chunks().some((chunk) => chunk.sessionId === second); i++) await Bun.sleep(25)

    const started = replayOf(first)
    expect(started.slice(0, 3).map((e) => e.type)).toEqual([META, FULL_SNAPSHOT, CUSTOM])
    expect(started[2].data.payload).toEqual({ step: 'started' })

    // The mouse down began the session; the snapshot it asked for comes first, then the press, the click and what it changed.
    const resumed = replayOf(second)
    expect(resumed.slice(0, 2).map((e) => e.type)).toEqual([META, FULL_SNAPSHOT])
    const pressed = resumed.filter((e) => e.type === INCREMENTAL && e.data.source === MOUSE_INTERACTION).map((e) => e.data.type)
    expect(pressed).toContain(MOUSE_DOWN)
    expect(pressed).toContain(CLICK)
    expect(JSON.stringify(resumed)).toContain('one pair of wool socks')
    // Players order events by time: nothing is stamped before the snapshot it follows.
    for (const events of [started, resumed]) expect(events.slice(2).filter((e) => e.timestamp < events[1].timestamp)).toEqual([])
  }, 30_000)
})
