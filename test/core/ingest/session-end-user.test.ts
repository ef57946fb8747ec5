import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { countedEvents, startCore, startCoreBeside, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

/*
 * WIRE.md (Ids): "`endUserId` may be null/absent: the server then makes one and returns it." On
 * /events, /customEvent and /customEvent/batch, as on /init: the end user is the session's when it
 * has one, else one is made, stored and given to the session; custom events carry it.
 */

const t0 = Date.now() - 60_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface Route {
  path: string
  /** A body of the route for the session, with `extra` (an end user, or none). */
  body(sessionId: string, extra?: object): object
  /** The answer without `endUserId`. */
  answer: object
  /** Whether it stores rows in `events` (a replay chunk has no end user of its own). */
  storesEvents: boolean
}

const routes: Route[] = [
  { path: '/customEvent', body: (sessionId, extra) => ({ sessionId, eventName: 'clicked', timestamp: t0, ...extra }), answer: { success: true }, storesEvents: true },
  {
    path: '/customEvent/batch',
    body: (sessionId, extra) => ({ sessionId, events: [{ eventName: 'a', timestamp: t0 }, { eventName: 'b', timestamp: t0 + 5 }], ...extra }),
    answer: { success: true, accepted: 2 },
    storesEvents: true,
  },
  {
    path: '/events',
    body: (sessionId, extra) => ({
      sessionId,
      events: [
        { type: 4, timestamp: t0, data: { href: 'https://shop.test/', width: 800, height: 600 } },
        { type: 2, timestamp: t0 + 1, data: { node: { type: 0, childNodes: [], id: 1 }, initialOffset: { left: 0, top: 0 } } },
      ],
      ...extra,
    }),
    answer: { success: true, accepted: 2, dropped: 0 },
    storesEvents: false,
  },
]

const sessionEndUser = async (core: TestCore, sessionId: string) =>
  (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from sessions where session_id = ${sessionId}`))[0]?.end_user_id
const endUserExists = async (core: TestCore, endUserId: string) =>
  (await core.database.db.rows(sql`select 1 from end_users where end_user_id = ${endUserId}`)).length === 1
const endUserCount = async (core: TestCore) => (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from end_users`))[0].n
const eventEndUsers = async (core: TestCore, sessionId: string) =>
  (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from events where session_id = ${sessionId}`)).map((e) => e.end_user_id)

describe.each(routes)('$path without an end user named', (route) => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())
  const post = (body: object) => core.post(`/api/ingestion${route.path}`, body)
  const id = (name: string) => `${route.path.replaceAll('/', '_')}-${name}`

  test('a new session: one is made, answered, stored and given to the session; its events carry it', async () => {
    for (const [name, extra] of [['absent', {}], ['null', { endUserId: null }]] as const) {
      const sessionId = id(name)
      const res = await post(route.body(sessionId, extra))
      expect(res.status).toBe(200)
      const answer = await res.json()
      expect(answer).toEqual({ ...route.answer, endUserId: expect.stringMatching(UUID) })
      // An added field, after the ones fielded clients know.
      expect(Object.keys(answer)).toEqual([...Object.keys(route.answer), 'endUserId'])
      expect(await sessionEndUser(core, sessionId)).toBe(answer.endUserId)
      expect(await endUserExists(core, answer.endUserId)).toBe(true)
      if (route.storesEvents) {
        const stored = await eventEndUsers(core, sessionId)
        expect(stored.length).toBeGreaterThan(0)
        expect(stored.every((e) => e === answer.endUserId)).toBe(true)
      }
    }
  })

  test('the next request of the session without one: the same end user, no other made', async () => {
    const sessionId = id('again')
    const first = await (await post(route.body(sessionId))).json()
    expect(first.endUserId).toMatch(UUID)
    const users = await endUserCount(core)
    const again = await (await post(route.body(sessionId, { endUserId: null, ...(route.path === '/events' && { windowId: 'w2' }) }))).json()
    expect(again.endUserId).toBe(first.endUserId)
    expect(await endUserCount(core)).toBe(users)
    if (route.storesEvents) expect(new Set(await eventEndUsers(core, sessionId))).toEqual(new Set([first.endUserId]))
  })

  test("a session that has an end user (named by an earlier request): that one is answered and stored on the rows; the naming request's answer is as before", async () => {
    const sessionId = id('named')
    const named = await post(route.body(sessionId, { endUserId: 'named-user' }))
    expect(await named.text()).toBe(JSON.stringify(route.answer))
    const users = await endUserCount(core)
    const anonymous = await (await post(route.body(sessionId, { ...(route.path === '/events' && { windowId: 'w2' }) }))).json()
    expect(anonymous.endUserId).toBe('named-user')
    expect(await endUserCount(core)).toBe(users)
    expect(await sessionEndUser(core, sessionId)).toBe('named-user')
    if (route.storesEvents) expect(new Set(await eventEndUsers(core, sessionId))).toEqual(new Set(['named-user']))
  })
})

describe('requests of a new session naming no end user, at once (one commit)', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore({ writer: { lingerMs: 200 } })
  })
  afterAll(() => core.close())

  test.each(routes)('$path: one end user, all answers agree', async (route) => {
    const sessionId = `at-once${route.path.replaceAll('/', '_')}`
    const users = await endUserCount(core)
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        // Replay chunks of other windows (the same chunk in one window would be a resend).
        core.post(`/api/ingestion${route.path}`, route.body(sessionId, { ...(i % 2 && { endUserId: null }), ...(route.path === '/events' && { windowId: `w${i}` }) })).then((r) => r.json()),
      ),
    )
    const answered = new Set(answers.map((a) => a.endUserId))
    expect(answered.size).toBe(1)
    const [endUserId] = answered
    expect(endUserId).toMatch(UUID)
    expect(await sessionEndUser(core, sessionId)).toBe(endUserId)
    expect(await endUserCount(core)).toBe(users + 1)
    expect(await endUserExists(core, endUserId)).toBe(true)
    if (route.storesEvents) expect(new Set(await eventEndUsers(core, sessionId))).toEqual(new Set([endUserId]))
  })

  test('the three routes together: one end user', async () => {
    const sessionId = 'at-once-mixed'
    const answers = await Promise.all(
      routes.flatMap((route) => [0, 1].map((i) => core.post(`/api/ingestion${route.path}`, route.body(sessionId, { windowId: `w${i}` })).then((r) => r.json()))),
    )
    expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
    expect(await sessionEndUser(core, sessionId)).toBe(answers[0].endUserId)
    expect(new Set(await eventEndUsers(core, sessionId))).toEqual(new Set([answers[0].endUserId]))
  })
})

test.skipIf(engine !== 'postgres')('two cores sharing one database give a new session one end user', async () => {
  const first = await startCore()
  const second = await startCoreBeside(first)
  try {
    const sessionId = 'two-cores'
    const answers = await Promise.all(
      routes.flatMap((route, r) =>
        [0, 1, 2, 3].map((i) => (i % 2 ? first : second).post(`/api/ingestion${route.path}`, route.body(sessionId, { windowId: `w${r}-${i}` }), { key: first.key }).then((res) => res.json())),
      ),
    )
    expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
    expect(await sessionEndUser(first, sessionId)).toBe(answers[0].endUserId)
    expect(await endUserCount(first)).toBe(1)
    expect(new Set(await eventEndUsers(first, sessionId))).toEqual(new Set([answers[0].endUserId]))
  } finally {
    await second.close()
    await first.close()
  }
})

describe('resends and the quota', () => {
  test('a resent custom event without an end user is stored once and counted once, with its session end user', async () => {
    const core = await startCore()
    const racing = await startCore({ writer: { lingerMs: 200 } })
    try {
      for (const [name, c] of [['apart', core], ['one-commit', racing]] as const) {
        const uuid = crypto.randomUUID()
        const before = await countedEvents(c)
        const body = { sessionId: `resend-${name}`, eventName: 'paid', uuid }
        const send = () => c.post('/api/ingestion/customEvent', body).then((r) => r.json())
        const answers = name === 'apart' ? [await send(), await send()] : await Promise.all([send(), send()])
        expect(answers[0].endUserId).toMatch(UUID)
        expect(answers[1].endUserId).toBe(answers[0].endUserId)
        expect(await countedEvents(c)).toBe(before + 1)
        const stored = await c.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from events where uuid = ${uuid}`)
        expect(stored).toEqual([{ end_user_id: answers[0].endUserId }])
        // And beside a new event, in a batch: the new one counts.
        await c.post('/api/ingestion/customEvent/batch', { sessionId: body.sessionId, events: [{ eventName: 'paid', uuid }, { eventName: 'next', uuid: crypto.randomUUID() }] })
        expect(await countedEvents(c)).toBe(before + 2)
      }
    } finally {
      await racing.close()
      await core.close()
    }
  })

  test('the monthly limit counts them as before; a refused request makes no end user', async () => {
    const limited = await startCore({ monthlyLimit: 3 })
    try {
      const batch = await limited.post('/api/ingestion/customEvent/batch', { sessionId: 'q', events: [{ eventName: 'a' }, { eventName: 'b' }] })
      expect(await batch.json()).toEqual({ success: true, accepted: 2, endUserId: expect.stringMatching(UUID) })
      const last = await (await limited.post('/api/ingestion/customEvent', { sessionId: 'q', eventName: 'c' })).json()
      expect(last).toEqual({ success: true, endUserId: expect.stringMatching(UUID), monthlyLimitReached: true })
      expect(await countedEvents(limited)).toBe(3)
      const users = await endUserCount(limited)
      for (const route of routes) expect((await limited.post(`/api/ingestion${route.path}`, route.body('q-refused'))).status).toBe(429)
      expect(await sessionEndUser(limited, 'q-refused')).toBeUndefined()
      expect(await endUserCount(limited)).toBe(users)
      expect(await countedEvents(limited)).toBe(3)
    } finally {
      await limited.close()
    }
  })
})
