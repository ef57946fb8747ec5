import { ServiceTracker, type TrackerOptions } from '@sightline/tracker'
import { fakeClock, settle, type FakeClock } from './clock'
import { openPage, type Page, type PageOptions } from './dom'
import { SERVICE_BASE, fakeService, type FakeService } from './service'

export const KEY = 'sl_dev_test_key'

// The modules start() imports, loaded once here: a test then waits a few ticks (settle) for them,
// however long the first load of each (read and compiled) takes on a busy machine.
await Promise.all([import('@sightline/tracker/auto'), import('@sightline/tracker/record'), import('@sightline/tracker/presence')])

export interface Tracked {
  tracker: ServiceTracker
  page: Page
  win: Page['win']
  service: FakeService
  clock: FakeClock
  close(): Promise<void>
}

const open: Tracked[] = []

/** A tracker in a fresh happy-dom page, sending to a fake service, on a fake clock. */
export function tracked(
  options: TrackerOptions = {},
  page: { url?: string; html?: string; storage?: PageOptions; scriptUrl?: string | null; service?: FakeService; clock?: FakeClock; offline?: boolean; referrer?: string } = {},
): Tracked {
  const opened = openPage(page.url, page.html, page.storage)
  const service = page.service ?? fakeService()
  service.catchBeacons(opened.win)
  const clock = page.clock ?? fakeClock()
  if (page.offline) Object.defineProperty(opened.win.navigator, 'onLine', { value: false, configurable: true })
  if (page.referrer) Object.defineProperty(opened.win.document, 'referrer', { value: page.referrer, configurable: true })
  const tracker = ServiceTracker.init(
    KEY,
    { ingestionUrl: SERVICE_BASE, logLevel: 'none', ...options },
    { window: opened.win, fetch: service.fetch, clock, scriptUrl: page.scriptUrl ?? null },
  )
  const result: Tracked = {
    tracker,
    page: opened,
    win: opened.win,
    service,
    clock,
    async close() {
      tracker.stop()
      await settle()
      await opened.close()
    },
  }
  open.push(result)
  return result
}

/** Stops every tracker a test opened (afterEach). */
export async function closeAll() {
  for (const t of open.splice(0)) await t.close()
}

/** rrweb events of every replay chunk sent so far. */
export const replayEvents = (service: FakeService) => service.to('/events').flatMap((request) => request.body.events)

/** Fires a page lifecycle event the way the browser does on leaving. */
export function pageHide(win: Page['win']) {
  win.dispatchEvent(new win.Event('pagehide'))
}
