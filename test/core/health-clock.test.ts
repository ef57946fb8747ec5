import { afterAll, afterEach, beforeAll, expect, setSystemTime, test } from 'bun:test'
import { startCore, type TestCore } from '../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())
afterEach(() => setSystemTime())

test('uptimeSeconds counts the time served, whatever the system clock is set to meanwhile', async () => {
  await Bun.sleep(1_100)
  // NTP stepping back a clock that ran fast, a virtual machine resumed from a snapshot.
  setSystemTime(new Date(Date.now() - 3_600_000))
  const back = await (await core.request('/health')).json()
  expect(back.uptimeSeconds).toBe(1)
  setSystemTime(new Date(Date.now() + 2 * 3_600_000))
  const ahead = await (await core.request('/health')).json()
  expect(ahead.uptimeSeconds).toBe(1)
})
