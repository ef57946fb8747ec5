import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { openBrowser, type TestBrowser } from '../e2e/browser'

/**
 * The outbox in two tabs of one origin at once, in headless Chromium: a tab's view of localStorage
 * follows another tab's writes only some time after them, so what one tab writes must never be
 * built on what it read of the other's. The outbox module runs in each page as the tracker's
 * bundle has it.
 */

let site: ReturnType<typeof Bun.serve>
let browser: TestBrowser
let tabs: Page[]

beforeAll(async () => {
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, '../../tracker/src/storage.ts')], target: 'browser', format: 'esm' })
  if (!built.success) throw new AggregateError(built.logs, 'storage module build failed')
  const module = await built.outputs[0].text()
  site = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) =>
      new URL(request.url).pathname === '/storage.js'
        ? new Response(module, { headers: { 'content-type': 'text/javascript' } })
        : new Response('<!doctype html><title>tab</title>', { headers: { 'content-type': 'text/html' } }),
  })
  browser = await openBrowser()
  tabs = [browser.page, await browser.context.newPage()]
  for (const tab of tabs) await tab.goto(`http://127.0.0.1:${site.port}/`)
}, 60_000)

afterAll(async () => {
  await browser?.close()
  site?.stop(true)
})

/** In each tab at once: `count` parcels put (or removed) one at a time, the tab yielding between them, as a page does. */
const inTab = (tab: Page, action: 'put' | 'remove', ids: string[]) =>
  tab.evaluate(
    async ({ action, ids }) => {
      const { createOutbox, webStorage } = await import('/storage.js' as string)
      const outbox = createOutbox(webStorage(() => localStorage), 'sl_outbox:k')
      for (const id of ids) {
        if (action === 'put') outbox.put({ id, path: '/api/ingestion/customEvent/batch', body: { events: [{ uuid: id }] } })
        else outbox.remove(id)
        await new Promise((resolve) => setTimeout(resolve, 0))
      }
    },
    { action, ids },
  )

/** What each tab finds in the outbox once the other's writes have reached it. */
const keptIn = (tab: Page) =>
  tab.evaluate(async () => {
    const { createOutbox, webStorage } = await import('/storage.js' as string)
    await new Promise((resolve) => setTimeout(resolve, 300))
    return createOutbox(webStorage(() => localStorage), 'sl_outbox:k').all().map((parcel: { id: string }) => parcel.id)
  })

const ids = (tag: string, count: number) => Array.from({ length: count }, (_, i) => `${tag}${String(i).padStart(3, '0')}`)

describe('the outbox shared by two tabs, in headless Chromium', () => {
  test('two tabs putting parcels at once: every one of both is kept, none overwritten by the other tab', async () => {
    await Promise.all([inTab(tabs[0], 'put', ids('a', 200)), inTab(tabs[1], 'put', ids('b', 200))])
    const expected = [...ids('a', 200), ...ids('b', 200)]
    for (const tab of tabs) expect(await keptIn(tab)).toEqual(expected)
    await tabs[0].evaluate(() => localStorage.clear())
  }, 30_000)

  test('one tab removing what it drained while the other puts what it could not send: the drained ones go, every new one stays', async () => {
    await inTab(tabs[0], 'put', ids('a', 200))
    await Promise.all([inTab(tabs[0], 'remove', ids('a', 200)), inTab(tabs[1], 'put', ids('b', 200))])
    for (const tab of tabs) expect(await keptIn(tab)).toEqual(ids('b', 200))
    await tabs[0].evaluate(() => localStorage.clear())
  }, 30_000)
})
