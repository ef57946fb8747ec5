import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ACTIVITY_RESOLUTION_MS, endUserTouchIsKnown, knownAfter, mergeSessionTouches, sessionTouchIsKnown, type SessionTouch } from '@sightline/core/ingest/sessions/service'
import { parseUserAgent } from '@sightline/core/ingest/sessions/user-agent'
import { startCore, type TestCore } from '../../helpers/core'

const touch = (fields: Partial<SessionTouch> = {}): SessionTouch => ({
  projectId: 'p',
  sessionId: 's',
  environment: 'production',
  endUserId: null,
  firstAt: 10_000,
  lastAt: 10_000,
  ...fields,
})

describe('touches that add nothing', () => {
  const known = knownAfter(undefined, { firstAt: 10_000, lastAt: 10_000, endUserId: 'u', windowIds: ['w1'] })

  test('within the resolution and with nothing new: known', () => {
    expect(sessionTouchIsKnown(touch({ lastAt: 10_000 + ACTIVITY_RESOLUTION_MS }), known)).toBe(true)
    expect(sessionTouchIsKnown(touch({ endUserId: 'other', windowIds: ['w1'] }), known)).toBe(true)
  })

  test('anything new is written', () => {
    expect(sessionTouchIsKnown(touch(), undefined)).toBe(false)
    expect(sessionTouchIsKnown(touch({ lastAt: 10_001 + ACTIVITY_RESOLUTION_MS }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ firstAt: 9_999 }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ windowIds: ['w2'] }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ entryUrl: 'https://x.test/' }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ automaticProperties: { a: 1 } }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ geo: { country: 'DE', region: null, city: null, latitude: null, longitude: null, timezone: null } }), known)).toBe(false)
    expect(sessionTouchIsKnown(touch({ endUserId: 'u' }), knownAfter(undefined, { firstAt: 10_000, lastAt: 10_000 }))).toBe(false)
  })

  test('end users: attributes and geo are always written', () => {
    const user = knownAfter(undefined, { firstAt: 10_000, lastAt: 10_000 })
    expect(endUserTouchIsKnown({ projectId: 'p', endUserId: 'u', at: 10_500 }, user)).toBe(true)
    expect(endUserTouchIsKnown({ projectId: 'p', endUserId: 'u', at: 10_500, attributes: {} }, user)).toBe(true)
    expect(endUserTouchIsKnown({ projectId: 'p', endUserId: 'u', at: 10_500, attributes: { a: 1 } }, user)).toBe(false)
    expect(endUserTouchIsKnown({ projectId: 'p', endUserId: 'u', at: 12_000 }, user)).toBe(false)
  })

  test('a row written without activity knows no times: any activity is written, to replace its receipt times', () => {
    const receipt = knownAfter(undefined, { firstAt: 10_000, lastAt: 10_000, noActivity: true })
    expect(sessionTouchIsKnown(touch(), receipt)).toBe(false)
    expect(endUserTouchIsKnown({ projectId: 'p', endUserId: 'u', at: 10_000 }, receipt)).toBe(false)
  })

  test("touches of one commit with two user agents keep one of them whole, never one's browser with the other's device", () => {
    const desktop = parseUserAgent('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36')!
    const phone = parseUserAgent('Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36')!
    const [merged] = mergeSessionTouches([touch({ firstAt: 20_000, ...phone }), touch({ firstAt: 10_000, ...desktop }), touch({ firstAt: 5_000 })])
    expect(merged).toMatchObject(desktop)
  })

  test('user agents parse into browser, OS and device', () => {
    expect(parseUserAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15')).toMatchObject({
      browser: 'Safari',
      os: 'macOS',
      deviceType: 'desktop',
    })
    expect(parseUserAgent('Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1')?.deviceType).toBe('tablet')
    expect(parseUserAgent('curl/8.5.0')).toMatchObject({ browser: null, deviceType: null })
    expect(parseUserAgent('')).toBeNull()
  })
})

describe('session activity as stored', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const lastActivity = async (sessionId: string) =>
    Number((await core.database.db.rows<{ last: string }>(sql`select (extract(epoch from last_activity_at) * 1000)::bigint::text as last from sessions where session_id = ${sessionId}`))[0].last)

  test('last activity follows the events to within the resolution; what is new is always written', async () => {
    const t0 = Date.now() - 60_000
    const send = (timestamp: number, extra: object = {}) => core.post('/api/ingestion/customEvent', { sessionId: 'act', eventName: 'e', timestamp, ...extra })
    await send(t0)
    await send(t0 + 400)
    expect(t0 + 400 - (await lastActivity('act'))).toBeLessThanOrEqual(ACTIVITY_RESOLUTION_MS)
    await send(t0 + 2_500)
    expect(await lastActivity('act')).toBe(t0 + 2_500)
    // An end user named for a session that has none, at a time known already, is new: a heartbeat
    // naming none opens a session without one (log lines, errors and the like naming none get one
    // made, see session-end-user-observability.test.ts); a custom event at the beat's time names it.
    const endUserOf = async (sessionId: string) =>
      (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from sessions where session_id = ${sessionId}`))[0].end_user_id
    await core.post('/api/ingestion/heartbeat', { sessionId: 'act-late' })
    expect(await endUserOf('act-late')).toBeNull()
    await send(await lastActivity('act-late'), { sessionId: 'act-late', endUserId: 'late-user' })
    expect(await endUserOf('act-late')).toBe('late-user')
    // An earlier event moves the start back at once.
    await send(t0 - 10)
    const [start] = await core.database.db.rows<{ started: string }>(sql`select (extract(epoch from started_at) * 1000)::bigint::text as started from sessions where session_id = 'act'`)
    expect(Number(start.started)).toBe(t0 - 10)
  })

  test("an end user's first and last seen are the earliest and latest times of what names them, as their session's start and last activity", async () => {
    const seen = async (endUserId: string) =>
      (
        await core.database.db.rows<{ first: string; last: string }>(sql`
          select (extract(epoch from first_seen_at) * 1000)::bigint::text as first, (extract(epoch from last_seen_at) * 1000)::bigint::text as last
          from end_users where end_user_id = ${endUserId}`)
      )[0]
    const t0 = Date.now() - 60_000
    const events = [{ eventName: 'a', timestamp: t0 }, { eventName: 'b', timestamp: t0 + 30_000 }]
    await core.post('/api/ingestion/customEvent/batch', { sessionId: 'seen-1', endUserId: 'seen-user', events })
    expect(await seen('seen-user')).toEqual({ first: String(t0), last: String(t0 + 30_000) })
    const logs = [{ level: 'info', message: 'earlier', timestampMs: t0 - 5_000 }, { level: 'info', message: 'later', timestampMs: t0 + 40_000 }]
    await core.post('/api/ingestion/logs', { sessionId: 'seen-1', endUserId: 'seen-user', logs })
    expect(await seen('seen-user')).toEqual({ first: String(t0 - 5_000), last: String(t0 + 40_000) })

    const chunk = [{ type: 4, timestamp: t0, data: { href: 'https://shop.example/' } }, { type: 2, timestamp: t0 + 2_000, data: {} }]
    await core.post('/api/ingestion/events', { sessionId: 'seen-2', endUserId: 'seen-replay', events: chunk })
    expect(await seen('seen-replay')).toEqual({ first: String(t0), last: String(t0 + 2_000) })
  })
})
