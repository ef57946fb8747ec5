import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * WIRE.md (Ids): "`endUserId` may be null/absent: the server then makes one and returns it." As on
 * /events and /customEvent (session-end-user.test.ts), on /logs, /network, /errors, /spans/batch (with
 * a session) and /ip-info: the session's end user, else one made, stored and given to the session; the
 * rows carry it and the answer adds it. Bodies naming an end user are answered as before.
 */

const t0 = Date.now() - 60_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface Route {
  path: string
  body(sessionId: string, extra?: object): object
  /** The answer to a body naming its end user. */
  answer: object
  /** The table its rows go to, when it stores rows of its own. */
  table?: string
}

const routes: Route[] = [
  {
    path: '/logs',
    body: (sessionId, extra) => ({ sessionId, level: 'info', message: 'hello', url: 'https://shop.test/', timestampMs: t0, ...extra }),
    answer: { success: true, accepted: 1 },
    table: 'logs',
  },
  {
    path: '/network',
    body: (sessionId, extra) => ({
      sessionId, requestId: `r-${sessionId}-${Math.random()}`, url: 'https://api.test/x', method: 'GET', status: 500, statusText: 'Server Error', duration: 12,
      timestampMs: t0, errorType: 'http', errorMessage: null, ...extra,
    }),
    answer: { success: true, accepted: 1 },
    table: 'network_errors',
  },
  {
    path: '/spans/batch',
    body: (sessionId, extra) => ({
      sessionId, spans: [{ traceId: 'a'.repeat(32), spanId: Math.random().toString(16).slice(2, 10).padEnd(16, '0'), name: 'GET /x', startTimeMs: t0, endTimeMs: t0 + 5 }], ...extra,
    }),
    answer: { success: true, accepted: 1 },
    table: 'spans',
  },
  { path: '/ip-info', body: (sessionId, extra) => ({ sessionId, ...extra }), answer: { success: true, geo: null } },
]

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const post = async (path: string, body: object) => (await core.post(`/api/ingestion${path}`, body)).json() as Promise<Record<string, unknown>>
const sessionEndUser = async (sessionId: string) =>
  (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from sessions where session_id = ${sessionId}`))[0]?.end_user_id
const endUserExists = async (endUserId: string) => (await core.database.db.rows(sql`select 1 from end_users where end_user_id = ${endUserId}`)).length === 1
const rowEndUsers = async (table: string, sessionId: string) =>
  (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from ${sql.identifier(table)} where session_id = ${sessionId}`)).map((r) => r.end_user_id)

describe.each(routes)('$path without an end user named', (route) => {
  test('makes one, gives it to the session, stores the rows with it and answers it; the next request gets the same', async () => {
    const sessionId = `obs-new${route.path.replaceAll('/', '_')}`
    const first = await post(route.path, route.body(sessionId))
    expect(first).toEqual({ ...route.answer, endUserId: expect.stringMatching(UUID) })
    const second = await post(route.path, route.body(sessionId, { endUserId: null }))
    expect(second).toEqual({ ...route.answer, endUserId: first.endUserId })
    expect(await sessionEndUser(sessionId)).toBe(first.endUserId as string)
    expect(await endUserExists(first.endUserId as string)).toBe(true)
    if (route.table) expect(new Set(await rowEndUsers(route.table, sessionId))).toEqual(new Set([first.endUserId as string]))
  })

  test("takes the session's end user when it has one", async () => {
    const sessionId = `obs-known${route.path.replaceAll('/', '_')}`
    await post('/customEvent', { sessionId, endUserId: 'eu-known', eventName: 'x', timestamp: t0 })
    expect(await post(route.path, route.body(sessionId))).toEqual({ ...route.answer, endUserId: 'eu-known' })
    if (route.table) expect(await rowEndUsers(route.table, sessionId)).toEqual(['eu-known'])
  })

  test('answers a body naming its end user as before, byte for byte', async () => {
    const sessionId = `obs-named${route.path.replaceAll('/', '_')}`
    const res = await core.post(`/api/ingestion${route.path}`, route.body(sessionId, { endUserId: 'eu-named' }))
    expect(await res.text()).toBe(JSON.stringify(route.answer))
    if (route.table) expect(await rowEndUsers(route.table, sessionId)).toEqual(['eu-named'])
  })
})

describe('/errors without an end user named', () => {
  const report = (sessionId: string, extra?: object) => ({ sessionId, name: 'TypeError', message: `boom ${Math.random()}`, timestampMs: t0, ...extra })
  test("is stored and counted with the session's end user, made when it has none, and answers it", async () => {
    const first = await post('/errors', report('obs-errors'))
    expect(first).toEqual({ success: true, accepted: 1, issues: [expect.any(String)], endUserId: expect.stringMatching(UUID) })
    expect(await sessionEndUser('obs-errors')).toBe(first.endUserId as string)
    expect(await rowEndUsers('error_events', 'obs-errors')).toEqual([first.endUserId as string])
    const named = await core.post('/api/ingestion/errors', report('obs-errors-named', { endUserId: 'eu-err' }))
    expect(Object.keys(await named.json())).toEqual(['success', 'accepted', 'issues'])
  })
})

describe('/spans/batch without a session', () => {
  test('makes no end user (there is no session to give it to) and answers as before', async () => {
    const body = { spans: [{ traceId: 'b'.repeat(32), spanId: 'c'.repeat(16), name: 'job', startTimeMs: t0, endTimeMs: t0 + 1 }] }
    const res = await core.post('/api/ingestion/spans/batch', body)
    expect(await res.text()).toBe(JSON.stringify({ success: true, accepted: 1 }))
    expect((await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from spans where span_id = ${'c'.repeat(16)}`))[0].end_user_id).toBeNull()
  })
})

describe('a batch over two sessions naming no end user', () => {
  test("gives each session its own end user and each row its session's", async () => {
    const body = {
      sessionId: 'obs-batch-a',
      logs: [
        { level: 'info', message: 'a', url: 'https://shop.test/', timestampMs: t0 },
        { level: 'info', message: 'b', url: 'https://shop.test/', timestampMs: t0, sessionId: 'obs-batch-b' },
      ],
    }
    const answer = await post('/logs', body)
    const [a, b] = [await sessionEndUser('obs-batch-a'), await sessionEndUser('obs-batch-b')]
    expect(answer).toEqual({ success: true, accepted: 2, endUserId: a })
    expect(a).not.toBe(b)
    expect(await rowEndUsers('logs', 'obs-batch-b')).toEqual([b!])
  })
})
