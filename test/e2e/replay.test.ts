import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { REPLAY_FLUSH_MS } from '@sightline/tracker/queue'
import { eventually } from '../tracker/helpers/e2e'
import { closedAfterEach, openBrowser } from './browser'
import { connectionStatus, shopJourney, trackerStarted } from './journey'
import { storedReplay } from './replay'
import { e2eSuite } from './suite'
import { startShop } from './shop'

/**
 * Replay integrity end to end, in headless Chromium through the relay to a real core: what core
 * stored of a session, decompressed and ordered by (window, seq), is a stream an rrweb player plays.
 */

const suite = e2eSuite()
const open = closedAfterEach()

const sessionOf = (page: import('playwright-core').Page) => page.evaluate(() => window.shop.tracker().then((t) => t.getSessionId()))

async function playable(sessions: string[]) {
  await eventually(async () => {
    const replays = await Promise.all(sessions.map((s) => storedReplay(suite.e2e, s)))
    for (const replay of replays) expect(replay.windows.size).toBeGreaterThan(0)
    const problems = replays.flatMap((r) => r.problems)
    expect(problems).toEqual([])
  }, 15_000)
}

/** A shop page through the relay, its clock in the test's hands, the tracker started: the page and its session. */
async function shopPage(path = '/', core = suite.e2e.base) {
  const shop = open(startShop({ key: suite.e2e.core.key, core, script: suite.script, tracker: { via: 'relay' } }))
  const { page } = open(await openBrowser())
  await page.clock.install()
  await page.goto(`${shop.url}${path}`)
  await trackerStarted(page)
  return { page, sessionId: await sessionOf(page) }
}

/** Between the relay and core: passes requests on, or answers as a core that is down or overloaded would. */
function upstream(core: string) {
  const state = { mode: 'up' as 'up' | 'down' | 'overloaded', refused: 0 }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      if (state.mode !== 'up' && url.pathname !== '/health/simple') {
        state.refused++
        if (state.mode === 'down') return new Response('bad gateway', { status: 502 })
        return Response.json({ success: false, error: { code: 'overloaded' } }, { status: 503, headers: { 'retry-after': '1' } })
      }
      const headers = new Headers(request.headers)
      headers.delete('host')
      return fetch(core + url.pathname + url.search, { method: request.method, headers, body: request.method === 'GET' ? undefined : await request.arrayBuffer(), redirect: 'manual' })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, state, close: () => void server.stop(true) }
}

describe('the stored replay plays, in headless Chromium', () => {
  test('a shop visit: page loads, client-side navigations, typing', async () => {
    const shop = open(startShop({ key: suite.e2e.core.key, core: suite.e2e.base, script: suite.script, tracker: { via: 'relay' } }))
    const browser = open(await openBrowser())
    let sessionId = ''
    await shopJourney(browser, shop.url, async () => {
      sessionId = await sessionOf(browser.page)
    })
    await playable([sessionId])
  })

  test('redaction changes, a logout and a new session after 30 idle minutes each start from a full snapshot', async () => {
    const { page, sessionId: first } = await shopPage('/products/wool-socks')
    const sessions = [first]
    await page.click('#add')
    await page.evaluate(() => window.shop.tracker().then((t) => t.setUnredactedFields(['h1'])))
    await page.click('nav >> text=Rain hat')
    await page.evaluate(() => window.shop.tracker().then((t) => t.logout()))
    sessions.push(await sessionOf(page))
    await page.click('#add')
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await page.clock.fastForward(31 * 60 * 1000)
    await page.click('nav >> text=Wool socks')
    await page.click('#add')
    sessions.push(await sessionOf(page))
    await page.evaluate(() => window.shop.tracker().then((t) => t.clearUnredactedFields()))
    await page.click('nav >> text=Home')
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0))
    await page.goto('about:blank')
    expect(new Set(sessions).size).toBe(3)
    await playable(sessions)
  })

  test('a core overloaded (503, Retry-After), then down, then up: the chunks kept and sent again fit in seq order, each once', async () => {
    const proxy = open(upstream(suite.e2e.base))
    const { page, sessionId } = await shopPage('/', proxy.url)
    await page.click('nav >> text=Wool socks')
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    for (const mode of ['overloaded', 'down'] as const) {
      proxy.state.mode = mode
      await page.click('#add')
      await page.click('nav >> text=Rain hat')
      await page.clock.fastForward(REPLAY_FLUSH_MS)
      await page.click('nav >> text=Wool socks')
      await page.clock.fastForward(REPLAY_FLUSH_MS)
      await page.clock.fastForward(1500)
    }
    expect(proxy.state.refused).toBeGreaterThan(0)
    proxy.state.mode = 'up'
    for (let i = 0; i < 8; i++) await page.clock.fastForward(10_000)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0), 20_000)
    await page.reload()
    await trackerStarted(page)
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0))
    await playable([sessionId])
  })

  test('large page changes: payloads split at about 1 MB, in order, none lost', async () => {
    const { page, sessionId } = await shopPage()
    for (const size of [400_000, 700_000, 300_000, 1_300_000, 50_000]) {
      await page.evaluate((n) => {
        const p = document.createElement('p')
        p.textContent = 'word '.repeat(n / 5)
        document.getElementById('view')!.append(p)
      }, size)
      await page.click('nav >> text=Wool socks')
      await page.click('nav >> text=Home')
    }
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await page.evaluate(() => window.shop.tracker().then((t) => t.setUnredactedFields(['p'])))
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0), 20_000)
    await page.goto('about:blank')
    await playable([sessionId])
    const chunks = await suite.e2e.rows<{ seq: number; raw_bytes: number }>(sql`select seq, raw_bytes from replay_chunks where session_id = ${sessionId} order by seq`)
    expect(chunks.length).toBeGreaterThan(3)
  })

  // A chunk answered 413 (here the beacon's own limit on page hide) is halved until each piece fits.
  // Its second halves took the tab's next seq: halved again, the pieces interleaved (n, n+2, n+1), and
  // chunks cut meanwhile took numbers before them, so in seq order the replay went back in time.
  test('a page left with more replay than a beacon carries: the pieces its chunk is halved into share its seq, in time order', async () => {
    const { page, sessionId } = await shopPage()
    // Sixteen changes of about 10 KB each that gzip cannot shrink (an attribute's random value), each its own event.
    for (let i = 0; i < 16; i++) {
      await page.evaluate(() => {
        const bytes = crypto.getRandomValues(new Uint8Array(7500))
        const div = document.createElement('div')
        div.setAttribute('data-blob', btoa(String.fromCharCode(...bytes)))
        document.getElementById('view')!.append(div)
      })
      await page.clock.runFor(5)
    }
    // Left before the replay flush: the chunk goes by beacon, halved until each piece fits; what does not is kept for the cart.
    await Promise.all([page.waitForURL('**/cart'), page.click('nav >> text=Cart')])
    await trackerStarted(page)
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0), 20_000)
    await page.goto('about:blank')
    await playable([sessionId])
  })

  test('nodes a recording leaves out (comments, social metas) and shadow roots: what changes next to them names only nodes the player has', async () => {
    const { page, sessionId } = await shopPage()
    const step = async (change: () => void) => {
      await page.evaluate(change)
      await page.clock.runFor(5)
    }
    await step(() => {
      const meta = document.createElement('meta')
      meta.setAttribute('property', 'og:title')
      meta.setAttribute('content', 'Socks')
      document.head.append(meta)
      document.getElementById('view')!.append(document.createComment('promo slot'))
    })
    await step(() => {
      document.head.querySelector('meta[property="og:title"]')!.setAttribute('content', 'More socks')
      const comment = [...document.getElementById('view')!.childNodes].find((n) => n.nodeType === 8)! as Comment
      comment.data = 'promo slot 2'
      comment.before(Object.assign(document.createElement('p'), { textContent: 'before the comment' }))
      document.getElementById('view')!.insertBefore(Object.assign(document.createElement('p'), { textContent: 'first' }), document.getElementById('view')!.firstChild)
    })
    await step(() => {
      const host = document.createElement('div')
      document.getElementById('view')!.append(host)
      const root = host.attachShadow({ mode: 'open' })
      root.append('shadow text', Object.assign(document.createElement('button'), { textContent: 'in shadow' }))
    })
    await step(() => {
      const root = document.querySelector('#view > div')!.shadowRoot!
      root.firstChild!.textContent = 'shadow text 2'
      root.append(document.createComment('c'))
      root.append(Object.assign(document.createElement('span'), { textContent: 'later' }))
    })
    await page.click('#view >> text=in shadow')
    await page.evaluate(() => window.shop.tracker().then((t) => t.setUnredactedFields(['p'])))
    await step(() => document.getElementById('view')!.replaceChildren())
    await page.clock.fastForward(REPLAY_FLUSH_MS)
    await eventually(async () => expect((await connectionStatus(page)).queued).toBe(0))
    await playable([sessionId])
  })
})
