import { describe, expect, test } from 'bun:test'
import { chromiumSite, htmlPage } from './helpers/chromium'

/**
 * A page and a same-origin frame in it, each running the tracker, in headless Chromium with t.js as
 * built. They share the tab's sessionStorage, where a page keeps its window id and chunk sequence.
 */

const tracked = (name: string) => `<script src="/t.js"></script><script>
  const tracker = ServiceTracker.init('sl_dev_frames', { ingestionUrl: location.origin, enableAutomaticTracking: false })
  tracker.start()
  setInterval(() => tracker.addEvent({ type: 5, data: { tag: '${name}', payload: {} }, timestamp: Date.now() }), 200)
</script>`

const chromium = chromiumSite((_, url) => htmlPage(`<!doctype html><body>${tracked(url.pathname === '/frame' ? 'frame' : 'top')}</body>`))

describe('a same-origin frame with its own tracker', () => {
  test("keeps a window of its own: the page's window id and chunk sequence go on as they were", async () => {
    const { browser, site, sends } = chromium
    const { page } = browser
    await page.goto(site.url + '/')
    const chunksOf = (tag: string) =>
      sends.filter((s) => s.path === '/events' && s.body.events.some((e: { type: number; data: { tag?: string } }) => e.type === 5 && e.data.tag === tag)).map((s) => ({ windowId: s.body.windowId, seq: s.body.seq }))
    for (let i = 0; i < 200 && chunksOf('top').length === 0; i++) await Bun.sleep(25)
    await page.evaluate(() => document.body.append(Object.assign(document.createElement('iframe'), { src: '/frame' })))
    for (let i = 0; i < 300 && (chunksOf('frame').length === 0 || chunksOf('top').length < 3); i++) await Bun.sleep(25)
    const top = chunksOf('top')
    const frame = chunksOf('frame')
    // The frame took the page's mark for a duplicated tab's, and started the tab's window over: the
    // page's next chunks went out as seq 0 again, and a reload took the frame's window id.
    expect(new Set(top.map((c) => c.windowId)).size).toBe(1)
    expect(top.map((c) => c.seq)).toEqual(top.map((_, i) => i))
    expect(frame.length).toBeGreaterThan(0)
    expect(frame.every((c) => c.windowId !== top[0].windowId)).toBe(true)
  }, 30_000)
})
