import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage } from './helpers/chromium'
import { FULL_SNAPSHOT, META } from './helpers/rrweb'

/**
 * t.js started in a page's head, in headless Chromium: rrweb waits for DOMContentLoaded before it
 * records (and before it takes any full snapshot), while the page goes on parsing, its scripts calling
 * the tracker, its timers running while the parser waits for a slow script.
 */

/** A session another tab of the origin started (its activity after 30 idle minutes, its logout). */
const OTHER_TAB_SESSION = 'session-of-another-tab'

const PAGE = `<!doctype html>
<html><head>
  <script src="/t.js"></script>
  <script>
    window.tracker = ServiceTracker.init('sl_dev_replay_loading', { ingestionUrl: location.origin })
    window.tracker.start()
  </script>
</head><body>
  <p id="greeting">Hello</p>
  <script>
    // rrweb has loaded by now (a module the tracker imports: a microtask), the document is still parsing.
    window.tracker.setUnredactedFields(['#greeting'])
    localStorage.setItem('sl_session', JSON.stringify({ id: ${JSON.stringify(OTHER_TAB_SESSION)}, start: Date.now(), last: Date.now() }))
    // Activity in that session, new to this tab: it asks for a full snapshot, on a timer.
    window.tracker.customEvent('clicked early')
  </script>
  <script src="/slow.js"></script>
  <p>the rest of the page</p>
</body></html>`

const chromium = chromiumSite(async (_, url) => {
  // The parser waits for this script, and the page's timers run meanwhile.
  if (url.pathname === '/slow.js') return Bun.sleep(500).then(() => new Response('', { headers: { 'content-type': 'text/javascript' } }))
  return htmlPage(PAGE)
})

describe('a full snapshot asked for before rrweb records, in headless Chromium', () => {
  test('throws nothing into the page nor into its log; the replay of the session begins with the snapshot rrweb takes when it starts', async () => {
    const { browser, site, sends } = chromium
    const { page } = browser
    const thrown: string[] = []
    page.on('pageerror', (error) => thrown.push(String(error)))
    await page.goto(site.url)
    await page.waitForTimeout(300)
    const logged = await page.evaluate(() => {
      const logs = window.tracker.viewLogs().filter((entry) => entry.level !== 'debug' && entry.level !== 'info')
      window.tracker.stop()
      return logs.map((entry) => entry.message)
    })
    for (let i = 0; i < 200 && !sends.some((s) => s.path === '/events'); i++) await Bun.sleep(25)

    expect(thrown).toEqual([])
    expect(logged).toEqual([])
    // The tracker reports what the page throws: nothing of its own.
    expect(sends.filter((s) => s.path === '/errors')).toEqual([])
    const replay = sends
      .filter((s) => s.path === '/events' && s.body.sessionId === OTHER_TAB_SESSION)
      .sort((a, b) => a.body.seq - b.body.seq)
      .flatMap((s) => s.body.events)
    expect(replay.slice(0, 2).map((e: { type: number }) => e.type)).toEqual([META, FULL_SNAPSHOT])
    // Shown from the first snapshot on, as the page asked before it.
    expect(JSON.stringify(replay[1])).toContain('Hello')
  }, 30_000)
})

declare const ServiceTracker: typeof import('@sightline/tracker').ServiceTracker
declare global {
  interface Window {
    tracker: import('@sightline/tracker').ServiceTracker
  }
}
