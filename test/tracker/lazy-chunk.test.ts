import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { builtTracker } from './helpers/build'
import { fakeClock, settle } from './helpers/clock'
import { openPage } from './helpers/dom'
import { SERVICE_BASE, fakeService } from './helpers/service'

/**
 * The package as built, on a page where connection.js cannot be loaded (offline, blocked, a 404
 * after a deploy): its import rejects. What needs it answers still, never rejects.
 */

let esm: string
beforeAll(async () => {
  esm = await mkdtemp(join(tmpdir(), 'sightline-no-connection-'))
  await cp(join(await builtTracker(), 'esm'), esm, { recursive: true })
  await Bun.write(join(esm, 'connection.js'), "throw new TypeError('Failed to fetch dynamically imported module: connection.js')\n")
}, 60_000)

afterAll(async () => {
  await rm(esm, { recursive: true, force: true })
})

async function trackedWithoutConnection(key: string) {
  const { ServiceTracker } = await import(join(esm, 'index.js'))
  const page = openPage('http://shop.test/')
  const service = fakeService()
  service.catchBeacons(page.win)
  const clock = fakeClock()
  const tracker = ServiceTracker.init(key, { ingestionUrl: SERVICE_BASE, logLevel: 'warn', enableAutomaticTracking: false }, { window: page.win, fetch: service.fetch, clock, scriptUrl: null })
  tracker.configureLogging({ enableConsole: false })
  return { tracker, service, page }
}

describe('connection.js not loaded', () => {
  test('testConnection resolves with a failed test the page can show, never rejects', async () => {
    const { tracker, page } = await trackedWithoutConnection('sl_dev_no_connection')
    expect(await tracker.testConnection()).toEqual({ ok: false, status: 0, latencyMs: 0, ingestionUrl: SERVICE_BASE, blocked: false })
    tracker.stop()
    await page.close()
  })

  test('identifyUser of 1 KB or more (which gzip would compress) resolves with the endUserId, sent uncompressed; so does one whose send fails (which the probe would follow)', async () => {
    const { tracker, service, page } = await trackedWithoutConnection('sl_dev_no_connection_identify')
    const endUserId = tracker.getUserInfo().endUserId
    expect(await tracker.identifyUser({ userProperties: { about: 'tea '.repeat(500) } })).toBe(endUserId)
    expect(service.to('/user').map((r) => [r.compressed, r.body.userAttributes.about.length])).toEqual([[false, 2000]])
    service.reply(() => 'network-error')
    const identified = tracker.identifyUser({ userProperties: { plan: 'pro' } })
    await settle()
    expect(await identified).toBe(endUserId)
    tracker.stop()
    await page.close()
  })
})
