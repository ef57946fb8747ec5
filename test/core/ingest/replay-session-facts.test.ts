import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mergeEndUserTouches, mergeSessionTouches, type SessionTouch } from '@sightline/core/ingest/sessions/service'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::bigint::text`)
const sessionTimes = async (sessionId: string) =>
  (
    await core.database.db.rows<{ started: string; last: string; ended: string | null }>(sql`
      select ${ms('started_at')} as started, ${ms('last_activity_at')} as last, ${ms('ended_at')} as ended from sessions where session_id = ${sessionId}`)
  )[0]
const endUserTimes = async (endUserId: string) =>
  (
    await core.database.db.rows<{ first: string; last: string }>(sql`
      select ${ms('first_seen_at')} as first, ${ms('last_seen_at')} as last from end_users where end_user_id = ${endUserId}`)
  )[0]
const propertiesOf = async (sessionId: string) =>
  (await core.database.db.rows<{ p: unknown }>(sql`select automatic_properties as p from sessions where session_id = ${sessionId}`))[0].p

const full = (timestamp: number) => ({ type: 2, timestamp, data: { node: { type: 0, childNodes: [], id: 1 }, initialOffset: { left: 0, top: 0 } } })
const move = (timestamp: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x: 1, y: 1, id: 1, timeOffset: 0 }] } })
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/events', body)
  expect(res.status).toBe(200)
  return res.json()
}

describe('a replay chunk without a valid event', () => {
  test("keeps an existing session's start and last activity, and its end user's first and last seen", async () => {
    // A session that ended hours ago; its outbox resends chunks now that hold nothing valid.
    const t = Date.now() - 3 * 3_600_000
    await send({ sessionId: 'quiet-1', endUserId: 'quiet-user', windowId: 'w', events: [full(t), move(t + 2_000)] })
    const stored = { started: String(t), last: String(t + 2_000), ended: null }
    expect(await sessionTimes('quiet-1')).toEqual(stored)

    // With something new (properties), so that it is written, not skipped as known.
    const invalid = [{ nope: true }, { type: 3, timestamp: -1, data: {} }]
    expect(await send({ sessionId: 'quiet-1', endUserId: 'quiet-user', windowId: 'w', events: invalid, automaticProperties: { language: 'fr' } })).toEqual({
      success: true,
      accepted: 0,
      dropped: 2,
    })
    expect(await sessionTimes('quiet-1')).toEqual(stored)
    await send({ sessionId: 'quiet-1', endUserId: 'quiet-user', events: [], automaticProperties: { timezone: 'Europe/Paris' } })
    expect(await sessionTimes('quiet-1')).toEqual(stored)
    expect(await endUserTimes('quiet-user')).toEqual({ first: String(t), last: String(t + 2_000) })

    // Activity that comes later is still recorded (the chunk without events taught this process nothing of the session's times).
    await send({ sessionId: 'quiet-1', endUserId: 'quiet-user', windowId: 'w', events: [move(t + 5_000)] })
    expect(await sessionTimes('quiet-1')).toEqual({ ...stored, last: String(t + 5_000) })
    expect(await endUserTimes('quiet-user')).toEqual({ first: String(t), last: String(t + 5_000) })
  })

  test("does not move an ended session's end", async () => {
    const t = Date.now() - 3 * 3_600_000
    await send({ sessionId: 'quiet-2', events: [full(t), move(t + 1_000)] })
    await core.database.db.orm.execute(sql`update sessions set ended_at = last_activity_at where session_id = 'quiet-2'`)
    await send({ sessionId: 'quiet-2', events: [{ type: 'x' }] })
    expect(await sessionTimes('quiet-2')).toEqual({ started: String(t), last: String(t + 1_000), ended: String(t + 1_000) })
  })

  test('still creates the session (and end user) it names first, at its receipt', async () => {
    const before = Date.now()
    await send({ sessionId: 'quiet-3', endUserId: 'quiet-new', events: [] })
    const times = await sessionTimes('quiet-3')
    expect(Number(times.started)).toBeGreaterThanOrEqual(before - 1)
    expect(times.last).toBe(times.started)
    expect(Number((await endUserTimes('quiet-new')).first)).toBeGreaterThanOrEqual(before - 1)
  })

  test('creates a session and end user whose receipt times the first activity replaces, though earlier', async () => {
    // The outbox resends a page's chunks out of order: one without a valid event arrives first, now.
    const before = Date.now()
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', windowId: 'w', events: [{ nope: true }] })
    const receipt = await sessionTimes('quiet-4')
    expect(Number(receipt.last)).toBeGreaterThanOrEqual(before - 1)
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', windowId: 'w', events: [] })
    expect(await sessionTimes('quiet-4')).toEqual(receipt)

    // Then the page's real chunk, recorded hours ago: its times are the session's, not widened by the receipt.
    const t = Date.now() - 3 * 3_600_000
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', windowId: 'w', events: [full(t), move(t + 2_000)] })
    const stored = { started: String(t), last: String(t + 2_000), ended: null }
    expect(await sessionTimes('quiet-4')).toEqual(stored)
    expect(await endUserTimes('quiet-late')).toEqual({ first: String(t), last: String(t + 2_000) })

    // From then on they are the session's own: a chunk without events keeps them, activity widens them.
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', events: [], automaticProperties: { language: 'fr' } })
    expect(await sessionTimes('quiet-4')).toEqual(stored)
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', windowId: 'w', events: [move(t + 1_000)] })
    await send({ sessionId: 'quiet-4', endUserId: 'quiet-late', windowId: 'w', events: [move(t - 1_000)] })
    expect(await sessionTimes('quiet-4')).toEqual({ ...stored, started: String(t - 1_000) })
    expect(await endUserTimes('quiet-late')).toEqual({ first: String(t - 1_000), last: String(t + 2_000) })
  })

  test("a goodbye is activity of its own: a session created at its receipt, then ended, keeps that end and last activity", async () => {
    await send({ sessionId: 'quiet-5', windowId: 'w', events: [] })
    expect((await core.post('/api/ingestion/session-end', { sessionId: 'quiet-5', windowId: 'w' })).status).toBe(200)
    const ended = await sessionTimes('quiet-5')
    expect(ended.ended).not.toBeNull()
    const t = Date.now() - 3_600_000
    await send({ sessionId: 'quiet-5', windowId: 'w', events: [full(t), move(t + 1_000)] })
    // The goodbye's time is real, no stand-in: the earlier activity only moves the start.
    expect(await sessionTimes('quiet-5')).toEqual({ ...ended, started: String(t) })
  })

  test('merged in one commit with a chunk that has events, takes none of its times', () => {
    const base = { projectId: 'p', sessionId: 's', environment: 'production', endUserId: null }
    const quiet: SessionTouch = { ...base, firstAt: 99_000, lastAt: 99_000, noActivity: true, automaticProperties: { language: 'fr' } }
    const busy: SessionTouch = { ...base, firstAt: 10_000, lastAt: 12_000 }
    for (const order of [[quiet, busy], [busy, quiet]]) {
      const [merged] = mergeSessionTouches(order)
      expect(merged).toMatchObject({ firstAt: 10_000, lastAt: 12_000, automaticProperties: { language: 'fr' } })
      expect(merged.noActivity).toBeFalsy()
    }
    const [user] = mergeEndUserTouches([
      { projectId: 'p', endUserId: 'u', at: 99_000, noActivity: true },
      { projectId: 'p', endUserId: 'u', firstAt: 10_000, at: 12_000 },
    ])
    expect(user).toMatchObject({ firstAt: 10_000, at: 12_000 })
    expect(user.noActivity).toBeFalsy()
  })
})

describe('automaticProperties with null members (old trackers)', () => {
  test('a null never erases what the session has; values still merge, the latest winning', async () => {
    const t = Date.now() - 60_000
    await send({ sessionId: 'props-1', events: [full(t)], automaticProperties: { browser: 'Chrome', screen: '1280x720', language: 'de' } })
    await send({ sessionId: 'props-1', events: [move(t + 1_000)], automaticProperties: { browser: null, screen: '1920x1080', language: null } })
    expect(await propertiesOf('props-1')).toEqual({ browser: 'Chrome', screen: '1920x1080', language: 'de' })
    // Also without valid events, and in one commit with others of the same session.
    await Promise.all([
      send({ sessionId: 'props-1', events: [], automaticProperties: { browser: null, timezone: 'Europe/Berlin' } }),
      send({ sessionId: 'props-1', events: [move(t + 2_000)], automaticProperties: { browser: null, screen: null } }),
    ])
    expect(await propertiesOf('props-1')).toEqual({ browser: 'Chrome', screen: '1920x1080', language: 'de', timezone: 'Europe/Berlin' })
  })

  test('a first chunk whose members are all null stores no nulls, and later values are taken', async () => {
    const t = Date.now() - 60_000
    await send({ sessionId: 'props-2', events: [full(t)], automaticProperties: { browser: null, screen: null } })
    const first = (await propertiesOf('props-2')) as Record<string, unknown> | null
    expect(Object.values(first ?? {})).not.toContain(null)
    await send({ sessionId: 'props-2', events: [move(t + 1_000)], automaticProperties: { browser: 'Firefox', screen: null, language: 'en' } })
    expect(await propertiesOf('props-2')).toEqual({ browser: 'Firefox', language: 'en' })
  })

  test('merged in one commit, a null of the later touch keeps the earlier value', () => {
    const base = { projectId: 'p', sessionId: 's', environment: 'production', endUserId: null, firstAt: 10_000, lastAt: 10_000 }
    const [merged] = mergeSessionTouches([
      { ...base, automaticProperties: { browser: 'Chrome', screen: '1x1' } },
      { ...base, automaticProperties: { browser: null, screen: '2x2' } },
    ])
    expect(merged.automaticProperties).toEqual({ browser: 'Chrome', screen: '2x2' })
  })
})

describe("a meta event's href", () => {
  test('of NUL characters alone is no entry URL: it holds no entry time against the first real page', async () => {
    const at = Date.now() - 60_000
    const meta = (timestamp: number, href: string) => ({ type: 4, timestamp, data: { href, width: 800, height: 600 } })
    await send({ sessionId: 'nul-href', endUserId: 'nul-href-user', events: [meta(at, '\u0000'), full(at + 1)] })
    const entry = () => core.database.db.rows<{ entry_url: string | null }>(sql`select entry_url from sessions where session_id = 'nul-href'`)
    expect(await entry()).toEqual([{ entry_url: null }])
    // A page seen later, then: the session's entry, as the first page it knows.
    await send({ sessionId: 'nul-href', endUserId: 'nul-href-user', events: [meta(at + 5_000, 'https://shop.test/first'), full(at + 5_001)] })
    expect(await entry()).toEqual([{ entry_url: 'https://shop.test/first' }])
  })
})
