import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { engine } from '../../helpers/database'
import { groupingCores, startCoreBeside, type TestCore } from '../../helpers/core'

// A session keeps the automatic properties and SDK version of its newest replay chunk by client time
// (its last event), whatever order the chunks come in: a chunk retried from an outbox after newer ones
// committed must not set them back. The entry URL stays the first page's.

const cores = groupingCores()
const t0 = Date.now() - 600_000
const move = (timestamp: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x: 1, y: 1, id: 1, timeOffset: 0 }] } })
const meta = (timestamp: number, href: string) => ({ type: 4, timestamp, data: { href, width: 800, height: 600 } })

/** Chunk 1 of a page at t0 (800 wide, SDK 1), chunk 2 five seconds later (1200 wide, SDK 2). */
const chunks = (sessionId: string) => ({
  one: { sessionId, windowId: 'w', sdkVersion: '1.0.0', automaticProperties: { viewportWidth: 800, onlyInOne: 'kept' }, events: [meta(t0, 'https://shop.test/first'), move(t0 + 10)] },
  two: { sessionId, windowId: 'w', sdkVersion: '2.0.0', automaticProperties: { viewportWidth: 1200 }, events: [meta(t0 + 5_000, 'https://shop.test/second'), move(t0 + 5_010)] },
})

// Every core's requests go to the first one's project (each test core has a project of its own).
const post = (core: TestCore, body: object) => core.post('/api/ingestion/events', { endUserId: 'eu-props', ...body }, { key: cores.core.key })
const send = async (core: TestCore, body: object) => {
  const res = await post(core, body)
  expect(res.status).toBe(200)
}
const sessionOf = async (sessionId: string) =>
  (
    await cores.core.database.db.rows<{ automatic_properties: Record<string, unknown>; sdk_version: string; entry_url: string }>(sql`
      select automatic_properties, sdk_version, entry_url from sessions where session_id = ${sessionId}`)
  )[0]
const newest = { automatic_properties: { viewportWidth: 1200, onlyInOne: 'kept' }, sdk_version: '2.0.0', entry_url: 'https://shop.test/first' }

describe('a replay chunk resent after newer ones', () => {
  test('in a commit of its own, leaves the newer chunk’s properties and SDK version (and fills names the session lacks)', async () => {
    const { one, two } = chunks('props-apart')
    for (const body of [one, two, one]) await send(cores.core, body)
    expect(await sessionOf('props-apart')).toEqual(newest)
  })

  test('after later activity of another kind (a log), still lets the newest chunk win', async () => {
    const { one, two } = chunks('props-after-log')
    await send(cores.core, one)
    const log = { sessionId: 'props-after-log', endUserId: 'eu-props', level: 'info', message: 'later', url: 'https://shop.test/second', timestampMs: t0 + 60_000 }
    expect((await cores.core.post('/api/ingestion/logs', log)).status).toBe(200)
    for (const body of [two, one]) await send(cores.core, body)
    expect(await sessionOf('props-after-log')).toEqual(newest)
  })

  test('in one commit with the newer chunk, sent after it, leaves the newer one’s', async () => {
    const { one, two } = chunks('props-together')
    const first = send(cores.grouping, two)
    await Bun.sleep(50)
    await Promise.all([first, send(cores.grouping, one)])
    expect(await sessionOf('props-together')).toEqual(newest)
  })

  test('in one commit after the newer chunk committed alone, leaves the newer one’s', async () => {
    const { one, two } = chunks('props-then-together')
    await send(cores.core, one)
    await send(cores.core, two)
    await Promise.all([send(cores.grouping, one), send(cores.grouping, { ...one, events: [move(t0 + 20)] })])
    expect(await sessionOf('props-then-together')).toEqual(newest)
  })

  test('without a valid event (no client time), only fills names the session lacks', async () => {
    const { one, two } = chunks('props-undated')
    await send(cores.core, two)
    await send(cores.core, { ...one, events: [{ type: 99, timestamp: t0 }] })
    expect(await sessionOf('props-undated')).toMatchObject({ automatic_properties: { viewportWidth: 1200, onlyInOne: 'kept' }, sdk_version: '2.0.0' })
  })
})

describe.skipIf(engine !== 'postgres')('a replay chunk resent through another core process', () => {
  let other: TestCore
  beforeAll(async () => {
    other = await startCoreBeside(cores.core)
  })
  afterAll(() => other?.close())

  test('after the newer chunk committed through the first, leaves the newer one’s', async () => {
    const { one, two } = chunks('props-two-cores')
    for (const [core, body] of [[cores.core, one], [other, two], [cores.core, one], [other, one]] as const) await send(core, body)
    expect(await sessionOf('props-two-cores')).toEqual(newest)
  })

  test('racing the newer chunk through the other process, many times over, never ends older', async () => {
    for (let run = 0; run < 10; run++) {
      const sessionId = `props-race-${run}`
      const { one, two } = chunks(sessionId)
      await send(cores.core, one)
      const answers = await Promise.all([post(other, two), post(cores.core, one), post(other, one)])
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200])
      expect(await sessionOf(sessionId)).toEqual(newest)
    }
  })
})
