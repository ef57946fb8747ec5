import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { coreWithBreakableDatabase } from '../../helpers/breakable-database'
import { startCore, startCoreBeside, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const ANDROID = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36'

describe('POST /api/ingestion/init (deprecated)', () => {
  test('creates the session and end user, says it is deprecated', async () => {
    const before = Date.now()
    const res = await core.post(
      '/api/ingestion/init',
      { sessionId: 'init-1', endUserId: 'init-user', entryURL: 'https://shop.test/start', referrer: 'https://news.test/', sdkVersion: '1.0.0' },
      { headers: { 'user-agent': ANDROID } },
    )
    expect(res.status).toBe(200)
    expect(res.headers.get('deprecation')).toBe('true')
    expect(await res.json()).toEqual({ success: true, sessionId: 'init-1', endUserId: 'init-user' })
    const [session] = await core.database.db.rows<Record<string, unknown>>(sql`
      select end_user_id, entry_url, referrer, sdk_version, browser, os, device_type, (extract(epoch from started_at) * 1000)::bigint as started
      from sessions where session_id = 'init-1'`)
    expect(session).toMatchObject({
      end_user_id: 'init-user',
      entry_url: 'https://shop.test/start',
      referrer: 'https://news.test/',
      sdk_version: '1.0.0',
      browser: 'Mobile Chrome',
      os: 'Android',
      device_type: 'mobile',
    })
    expect(Number(session.started)).toBeGreaterThanOrEqual(before - 1)
    expect(await core.database.db.rows(sql`select 1 from end_users where end_user_id = 'init-user'`)).toHaveLength(1)
  })

  test('an absent or null endUserId gets one made by the server', async () => {
    for (const body of [{ sessionId: 'init-2' }, { sessionId: 'init-3', endUserId: null }]) {
      const answer = await (await core.post('/api/ingestion/init', body)).json()
      expect(answer.endUserId).toMatch(/^[0-9a-f-]{36}$/)
      const [session] = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from sessions where session_id = ${body.sessionId}`)
      expect(session.end_user_id).toBe(answer.endUserId)
    }
  })

  test('again without endUserId (a retry, the next page of the session): the end user of the session is answered, no other is made', async () => {
    const first = await (await core.post('/api/ingestion/init', { sessionId: 'init-4', endUserId: null })).json()
    const again = await (await core.post('/api/ingestion/init', { sessionId: 'init-4' })).json()
    expect(again.endUserId).toBe(first.endUserId)
    // A session another route opened with its end user: init answers that one.
    await core.post('/api/ingestion/customEvent', { sessionId: 'init-5', endUserId: 'ce-user', eventName: 'first' })
    expect((await (await core.post('/api/ingestion/init', { sessionId: 'init-5', endUserId: null })).json()).endUserId).toBe('ce-user')
    const made = await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from end_users where end_user_id not in ('init-user', 'someone-else', 'ce-user')`)
    expect(made[0].n).toBe(3) // init-2, init-3 and init-4
  })

  test('calling it again keeps what the session already knows', async () => {
    await core.post('/api/ingestion/init', { sessionId: 'init-1', endUserId: 'someone-else', entryURL: 'https://shop.test/later' })
    const [session] = await core.database.db.rows<{ end_user_id: string; entry_url: string }>(sql`select end_user_id, entry_url from sessions where session_id = 'init-1'`)
    expect(session).toEqual({ end_user_id: 'init-user', entry_url: 'https://shop.test/start' })
  })

  test('a very long entry URL or referrer (state in the query or hash) is cut to 2048 characters, not refused', async () => {
    const long = `https://shop.test/search?filters=${'x'.repeat(10_000)}`
    const res = await core.post('/api/ingestion/init', { sessionId: 'init-long', endUserId: 'init-long-user', entryURL: long, referrer: long })
    expect(res.status).toBe(200)
    const [session] = await core.database.db.rows<{ entry_url: string; referrer: string }>(sql`select entry_url, referrer from sessions where session_id = 'init-long'`)
    expect(session).toEqual({ entry_url: long.slice(0, 2048), referrer: long.slice(0, 2048) })
  })

  test('a long sdkVersion (a build string) is cut as on /events, not refused', async () => {
    // WIRE.md gives `sdkVersion?` no limit; /events takes any length and the session keeps 2048 characters.
    const sdkVersion = `1.2.3+build.${'f'.repeat(500)}`
    const res = await core.post('/api/ingestion/init', { sessionId: 'init-sdk', endUserId: 'init-sdk-user', sdkVersion })
    expect(res.status).toBe(200)
    const [session] = await core.database.db.rows<{ sdk_version: string }>(sql`select sdk_version from sessions where session_id = 'init-sdk'`)
    expect(session.sdk_version).toBe(sdkVersion)
  })

  test('the cut never splits a character in two: an emoji across the limit is left out whole', async () => {
    // 2,047 characters, then an emoji of two UTF-16 code units across the 2,048th.
    const referrer = `https://shop.test/?q=${'x'.repeat(2047 - 21)}😀tail`
    const res = await core.post('/api/ingestion/init', { sessionId: 'init-emoji', endUserId: 'init-emoji-user', entryURL: 'https://shop.test/', referrer })
    expect(res.status).toBe(200)
    const [session] = await core.database.db.rows<{ referrer: string }>(sql`select referrer from sessions where session_id = 'init-emoji'`)
    expect(session.referrer).toBe(referrer.slice(0, 2047))
  })

  test('an entry URL, referrer or sdkVersion of NUL characters alone keeps nothing: no empty entry that holds off the first real page', async () => {
    // NUL is dropped before storing; what is left of these is empty, which is no URL.
    const res = await core.post('/api/ingestion/init', { sessionId: 'init-nul', endUserId: 'init-nul-user', entryURL: '\u0000\u0000', referrer: '\u0000', sdkVersion: '\u0000' })
    expect(res.status).toBe(200)
    const read = () =>
      core.database.db.rows<Record<string, unknown>>(sql`select entry_url, entry_at is null as no_entry_time, referrer, sdk_version from sessions where session_id = 'init-nul'`)
    expect(await read()).toEqual([{ entry_url: null, no_entry_time: true, referrer: null, sdk_version: null }])
    // The page's meta event, a second after the init, is then the session's entry.
    const page = await core.post('/api/ingestion/events', { sessionId: 'init-nul', endUserId: 'init-nul-user', events: [{ type: 4, timestamp: Date.now() + 1000, data: { href: 'https://shop.test/first' } }] })
    expect(page.status).toBe(200)
    expect((await read())[0].entry_url).toBe('https://shop.test/first')
  })

  test('validation', async () => {
    const res = await core.post('/api/ingestion/init', { endUserId: 'x' })
    expect(res.status).toBe(400)
    expect((await res.json()).path).toBe('/sessionId')
  })
})

describe('inits of a new session without endUserId, at once', () => {
  const sessionEndUser = async (core: TestCore, sessionId: string) =>
    (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from sessions where session_id = ${sessionId}`))[0]?.end_user_id
  const endUsers = async (core: TestCore) =>
    (await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from end_users order by end_user_id`)).map((u) => u.end_user_id)

  // Requests sharing commits (they wait 2 ms for company), and each in a commit of its own (a batch
  // holds one request), several at once on Postgres.
  test.each([
    ['sharing commits', { lingerMs: 2 }],
    ['in separate commits', { maxBatchRows: 1 }],
  ])('all answer the one end user of the session, and no other is made (%s)', async (_, writer) => {
    const core = await startCore({ writer })
    try {
      for (let round = 0; round < 3; round++) {
        const sessionId = `race-${round}`
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => core.post('/api/ingestion/init', i % 2 ? { sessionId } : { sessionId, endUserId: null }).then((r) => r.json())),
        )
        const answered = new Set(answers.map((a) => a.endUserId))
        expect(answered.size).toBe(1)
        const [endUserId] = answered
        expect(endUserId).toMatch(/^[0-9a-f-]{36}$/)
        expect(await sessionEndUser(core, sessionId)).toBe(endUserId)
      }
      const sessions = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from sessions order by end_user_id`)
      expect(await endUsers(core)).toEqual(sessions.map((s) => s.end_user_id))
    } finally {
      await core.close()
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database answer them with one end user', async () => {
    const first = await startCore()
    const second = await startCoreBeside(first)
    try {
      for (let round = 0; round < 5; round++) {
        const sessionId = `two-${round}`
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? first : second).post('/api/ingestion/init', { sessionId }, { key: first.key }).then((r) => r.json())),
        )
        expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
        expect(await sessionEndUser(first, sessionId)).toBe(answers[0].endUserId)
      }
      const sessions = await first.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from sessions order by end_user_id`)
      expect(sessions).toHaveLength(5)
      expect(await endUsers(first)).toEqual(sessions.map((s) => s.end_user_id))
    } finally {
      await second.close()
      await first.close()
    }
  })
})

describe('Deprecation: true on every answer of /init', () => {
  const ORIGIN = { origin: 'https://shop.test' }
  /** The header is there, and a page of another origin may read it. */
  const expectDeprecated = (res: Response, status: number) => {
    expect([res.status, res.headers.get('deprecation')]).toEqual([status, 'true'])
    if (res.status !== 204) expect(res.headers.get('access-control-expose-headers')?.split(', ')).toContain('Deprecation')
  }

  test('refusals too: 400, 401, 405, 413 and preflight', async () => {
    const init = '/api/ingestion/init'
    expectDeprecated(await core.post(init, { endUserId: 'x' }, { headers: ORIGIN }), 400)
    expectDeprecated(await core.post(init, '{"sessionId":', { headers: ORIGIN }), 400)
    expectDeprecated(await core.post(init, { sessionId: 'dep-1' }, { key: null, headers: ORIGIN }), 401)
    expectDeprecated(await core.post(init, { sessionId: 'dep-1' }, { key: 'sl_dev_unknown', headers: ORIGIN }), 401)
    expectDeprecated(await core.request(init, { headers: ORIGIN }), 405)
    expectDeprecated(await core.post(init, { sessionId: 'dep-1', referrer: 'x'.repeat(1_100_000) }, { headers: ORIGIN }), 413)
    expectDeprecated(await core.request(init, { method: 'OPTIONS', headers: { ...ORIGIN, 'access-control-request-method': 'POST' } }), 204)
    expectDeprecated(await core.post(init, { sessionId: 'dep-1' }, { headers: ORIGIN }), 200)
    // Only /init is deprecated.
    const other = await core.post('/api/ingestion/customEvent', { sessionId: 'dep-1', eventName: 'e' }, { headers: ORIGIN })
    expect([other.status, other.headers.get('deprecation')]).toEqual([200, null])
    expect((await core.post(`${init}/`, { sessionId: 'dep-1' })).headers.get('deprecation')).toBeNull()
  })

  test('over the monthly limit (429)', async () => {
    const limited = await startCore({ monthlyLimit: 1 })
    try {
      expect((await limited.post('/api/ingestion/customEvent', { sessionId: 'dep-q', eventName: 'e' })).status).toBe(200)
      expectDeprecated(await limited.post('/api/ingestion/init', { sessionId: 'dep-q' }, { headers: ORIGIN }), 429)
    } finally {
      await limited.close()
    }
  })

  test('storage unavailable (503)', async () => {
    const setup = await coreWithBreakableDatabase()
    try {
      expect((await setup.core.post('/api/ingestion/customEvent', { sessionId: 'warm', eventName: 'e' })).status).toBe(200)
      setup.breakDatabase()
      const res = await setup.core.post('/api/ingestion/init', { sessionId: 'dep-503' }, { headers: ORIGIN })
      expectDeprecated(res, 503)
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
    } finally {
      await setup.close()
    }
  })
})
