import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createProject } from '@sightline/core/projects/service'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
/** RFC 9562's name-based UUID, version 5 (SHA-1 of the namespace's 16 bytes and the name in UTF-8). */
const uuidV5 = (name: string, namespace: string) => {
  const bytes = createHash('sha1').update(Buffer.from(namespace.replaceAll('-', ''), 'hex')).update(name, 'utf8').digest().subarray(0, 16)
  bytes[6] = (bytes[6] & 0x0f) | 0x50
  bytes[8] = (bytes[8] & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
const eventsOf = (sessionId: string) =>
  rows<{ uuid: string; event_name: string; properties: unknown; end_user_id: string | null; environment: string; ts: string; project_id: string }>(
    sql`select uuid::text, event_name, properties, end_user_id, environment, (extract(epoch from timestamp) * 1000)::bigint::text as ts, project_id::text
        from events where session_id = ${sessionId} order by timestamp, event_name`,
  )

describe('POST /api/ingestion/customEvent', () => {
  test('stores the fielded shape with its session and end user', async () => {
    const timestamp = Date.now() - 5000
    const res = await core.post('/api/ingestion/customEvent', {
      sessionId: 'ce-1',
      eventName: 'checkout',
      eventProperties: { total: 42.5, items: ['a', 'b'], nested: { ok: true } },
      endUserId: 'user-1',
      timestamp,
      uuid: '0190a4b4-1111-7000-8000-000000000001',
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true })
    expect(await eventsOf('ce-1')).toEqual([
      {
        uuid: '0190a4b4-1111-7000-8000-000000000001',
        event_name: 'checkout',
        properties: { total: 42.5, items: ['a', 'b'], nested: { ok: true } },
        end_user_id: 'user-1',
        environment: 'development',
        ts: String(timestamp),
        project_id: core.project.projectId,
      },
    ])
    const [session] = await rows<{ end_user_id: string; started: string; last: string }>(
      sql`select end_user_id, (extract(epoch from started_at) * 1000)::bigint::text as started, (extract(epoch from last_activity_at) * 1000)::bigint::text as last
          from sessions where session_id = 'ce-1'`,
    )
    expect(session).toEqual({ end_user_id: 'user-1', started: String(timestamp), last: String(timestamp) })
    expect(await rows(sql`select end_user_id from end_users where end_user_id = 'user-1'`)).toHaveLength(1)
  })

  test('endUserId null or absent, no timestamp, no uuid: stored with server values', async () => {
    const before = Date.now()
    const first = await core.post('/api/ingestion/customEvent', { sessionId: 'ce-2', eventName: 'a', endUserId: null })
    expect(first.status).toBe(200)
    // The server makes the end user (WIRE.md), and the session's answers the next request naming none.
    const { endUserId } = await first.json()
    expect(endUserId).toMatch(/^[0-9a-f-]{36}$/)
    expect((await core.post('/api/ingestion/customEvent', { sessionId: 'ce-2', eventName: 'b', eventProperties: null })).status).toBe(200)
    const stored = await eventsOf('ce-2')
    expect(stored).toHaveLength(2)
    expect(stored[0].uuid).not.toBe(stored[1].uuid)
    for (const event of stored) {
      expect(event.end_user_id).toBe(endUserId)
      expect(Number(event.ts)).toBeGreaterThanOrEqual(before - 1)
    }
  })

  test('a time more than 24 h ahead is clamped to the receive time', async () => {
    const before = Date.now()
    await core.post('/api/ingestion/customEvent', { sessionId: 'ce-3', eventName: 'future', timestamp: Date.now() + 3 * 86_400_000 })
    const [event] = await eventsOf('ce-3')
    expect(Number(event.ts)).toBeGreaterThanOrEqual(before - 1)
    expect(Number(event.ts)).toBeLessThanOrEqual(Date.now() + 1)
  })

  test('a time in microseconds (a clock read in the wrong unit) is days ahead too: clamped, not refused', async () => {
    const before = Date.now()
    const res = await core.post('/api/ingestion/customEvent/batch', {
      sessionId: 'ce-3us',
      events: [
        { eventName: 'micros', timestamp: Date.now() * 1000 },
        { eventName: 'huge', timestamp: 1e300 },
      ],
    })
    expect(await res.json()).toEqual({ success: true, accepted: 2, endUserId: expect.any(String) })
    const stored = await eventsOf('ce-3us')
    expect(stored.map((e) => e.event_name).sort()).toEqual(['huge', 'micros'])
    for (const event of stored) expect(Number(event.ts)).toBeWithin(before - 1, Date.now() + 2)
  })

  test('a time of a few thousand of the smallest doubles (5e-324) is 1970, as 0 is: stored on every route, not refused by the database', async () => {
    // Postgres refuses a division whose result underflows to zero (`5e-324 / 1000.0`), and every
    // time is stored through one (`to_timestamp(ms / 1000.0)`).
    const tiny = 5e-324
    const sent = [
      core.post('/api/ingestion/customEvent', { sessionId: 'ce-tiny', eventName: 'single', timestamp: tiny }),
      core.post('/api/ingestion/customEvent/batch', { sessionId: 'ce-tiny', events: [{ eventName: 'batch', timestamp: 2e-321 }] }),
      core.post('/api/ingestion/events', { sessionId: 'ce-tiny-replay', events: [{ type: 4, timestamp: tiny, data: { href: 'https://x.test/' } }] }),
      core.post('/api/ingestion/logs', { sessionId: 'ce-tiny', endUserId: 'u-tiny', level: 'info', message: 'm', url: 'https://x.test/', timestampMs: tiny }),
      core.post('/api/ingestion/network', {
        requestId: 'r-tiny', url: 'https://x.test/', method: 'GET', status: 500, statusText: null, duration: 1, timestampMs: tiny, startTimeMs: tiny,
        sessionId: 'ce-tiny', endUserId: 'u-tiny', errorType: null, errorMessage: null,
      }),
      core.post('/api/ingestion/spans/batch', {
        sessionId: 'ce-tiny',
        spans: [{ traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), name: 'n', startTimeMs: tiny, endTimeMs: tiny, events: [{ name: 'e', timeMs: tiny }] }],
      }),
      core.post('/api/ingestion/errors', { sessionId: 'ce-tiny', name: 'TinyError', message: 'tiny', timestampMs: tiny }),
    ]
    for (const res of await Promise.all(sent)) expect({ status: res.status, body: await res.json() }).toMatchObject({ status: 200, body: { success: true } })
    expect((await eventsOf('ce-tiny')).map((e) => [e.event_name, e.ts])).toEqual([['batch', '0'], ['single', '0']])
    const sessions = await rows<{ started: string }>(sql`select (extract(epoch from started_at) * 1000)::text as started from sessions where session_id like 'ce-tiny%'`)
    expect(sessions.map((s) => Number(s.started))).toEqual([0, 0])
  })

  test('unknown fields are ignored, NUL characters dropped', async () => {
    const res = await core.post('/api/ingestion/customEvent', {
      sessionId: 'ce-4',
      eventName: 'nul\u0000name',
      eventProperties: { text: 'a\u0000b' },
      sdkVersion: '9.9.9',
      somethingNew: { deep: [1] },
    })
    expect(res.status).toBe(200)
    const [event] = await eventsOf('ce-4')
    expect(event.event_name).toBe('nulname')
    expect(event.properties).toEqual({ text: 'ab' })
  })

  test('properties nested deeper than 512 levels are refused with 400 before the database, which would fail the requests committed with them', async () => {
    // Valid JSON that Postgres refuses ("stack depth limit exceeded") and the embedded database fails on.
    const nested = (depth: number, name: string) => `{"sessionId":"ce-deep","eventName":"${name}","eventProperties":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`
    const [refused, alongside] = await Promise.all([
      core.post('/api/ingestion/customEvent', nested(20_000, 'deep')),
      core.post('/api/ingestion/customEvent', { sessionId: 'ce-deep', eventName: 'alongside' }),
    ])
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ success: false, error: { code: 'validation_failed' }, path: '/eventProperties' })
    expect(alongside.status).toBe(200)
    // The body object, eventProperties, then 510 arrays: 512 levels are stored, 513 are not.
    expect((await core.post('/api/ingestion/customEvent', nested(510, 'at-limit'))).status).toBe(200)
    expect((await core.post('/api/ingestion/customEvent', nested(511, 'over-limit'))).status).toBe(400)
    expect((await eventsOf('ce-deep')).map((e) => e.event_name).sort()).toEqual(['alongside', 'at-limit'])
  })

  test('a batch item nested too deep is named in the 400 (`/events/1`), as any invalid item is, so that a client can send the others without it', async () => {
    const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
    const body = `{"sessionId":"ce-deep-batch","events":[{"eventName":"fine"},{"eventName":"deep","eventProperties":{"a":${deep(600)}}}]}`
    const refused = await core.post('/api/ingestion/customEvent/batch', body)
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ success: false, error: { code: 'validation_failed' }, path: '/events/1' })
    // A member that is no list is named alone; a key is written as JSON Pointer writes it.
    const single = await core.post('/api/ingestion/customEvent', `{"sessionId":"ce-deep-batch","eventName":"e","eventProperties":{"a":${deep(600)}}}`)
    expect(await single.json()).toMatchObject({ path: '/eventProperties' })
    const odd = await core.post('/api/ingestion/customEvent', `{"sessionId":"ce-deep-batch","eventName":"e","a/b~":{"x":${deep(600)}}}`)
    expect(await odd.json()).toMatchObject({ path: '/a~1b~0' })
  })

  test('text cut inside an emoji (a lone surrogate, as String.slice leaves it) is stored with U+FFFD in its place, not refused', async () => {
    // JSON.stringify writes a lone surrogate as an escape such as \ud83d; Postgres refuses that in json.
    const body = '{"sessionId":"ce-half","events":[{"eventName":"ok"},{"eventName":"half \\ud83d","eventProperties":{"name":"Jo \\ud83d","\\ude00":"low first","kept":"\\\\ud83d"}}]}'
    const res = await core.post('/api/ingestion/customEvent/batch', body)
    expect(res.status).toBe(200)
    const stored = await eventsOf('ce-half')
    expect(stored.map((e) => e.event_name).sort()).toEqual(['half \uFFFD', 'ok'])
    // An escaped backslash before "ud83d" is text, not a surrogate, and stays as sent.
    expect(stored.find((e) => e.event_name !== 'ok')?.properties).toEqual({ name: 'Jo \uFFFD', '\uFFFD': 'low first', kept: '\\ud83d' })
  })

  test('a resend with the same uuid is stored once', async () => {
    const body = { sessionId: 'ce-5', eventName: 'once', uuid: '0190a4b4-2222-7000-8000-000000000002' }
    for (let i = 0; i < 3; i++) expect((await core.post('/api/ingestion/customEvent', body)).status).toBe(200)
    expect(await eventsOf('ce-5')).toHaveLength(1)
  })

  test('null timestamp and uuid are taken as absent: stored with the receive time and an id of the server', async () => {
    const before = Date.now()
    const res = await core.post('/api/ingestion/customEvent', { sessionId: 'ce-null', eventName: 'nulls', timestamp: null, uuid: null, eventProperties: null, endUserId: null })
    expect(res.status).toBe(200)
    const [event] = await eventsOf('ce-null')
    expect(Number(event.ts)).toBeGreaterThanOrEqual(before - 1)
    expect(Number(event.ts)).toBeLessThanOrEqual(Date.now() + 1)
    expect(event.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/)
  })

  test('a uuid that is not a UUID is kept as a key: stored under a UUID named by it in the project, so a resend is stored once', async () => {
    const send = (uuid: string, eventName: string, key?: string) => core.post('/api/ingestion/customEvent', { sessionId: 'ce-ids', eventName, uuid }, { key })
    for (let i = 0; i < 3; i++) expect((await send('evt-42', 'named')).status).toBe(200)
    // RFC 9562 version 5 of "evt-42" in the project's namespace, as any implementation makes it.
    const named = (await eventsOf('ce-ids')).map((e) => e.uuid)
    expect(named).toEqual([uuidV5('evt-42', core.project.projectId)])
    // Another project's event with the same id is its own.
    const other = await createProject(core.database.db.orm, { name: 'other' })
    expect((await send('evt-42', 'named', other.keys.development)).status).toBe(200)
    const both = await rows<{ uuid: string }>(sql`select uuid::text from events where session_id = 'ce-ids' order by uuid`)
    expect(both.map((e) => e.uuid).sort()).toEqual([uuidV5('evt-42', core.project.projectId), uuidV5('evt-42', other.projectId)].sort())
    // A UUID's 32 hex digits alone are the same UUID; an empty uuid is none (each send stored).
    await send('0190A4B477777000800000000000000A', 'bare')
    await send('0190a4b4-7777-7000-8000-00000000000a', 'bare')
    await send('', 'empty')
    await send('', 'empty')
    const stored = await eventsOf('ce-ids')
    expect(stored.filter((e) => e.event_name === 'bare').map((e) => e.uuid)).toEqual(['0190a4b4-7777-7000-8000-00000000000a'])
    expect(stored.filter((e) => e.event_name === 'empty')).toHaveLength(2)
  })

  test.each([
    [{ eventName: 'x' }, '/sessionId'],
    [{ sessionId: 'has space', eventName: 'x' }, '/sessionId'],
    [{ sessionId: 'x'.repeat(129), eventName: 'x' }, '/sessionId'],
    [{ sessionId: 's' }, '/eventName'],
    // NUL is dropped before storing: a name of NUL alone would be stored empty.
    [{ sessionId: 's', eventName: '\u0000\u0000' }, '/eventName'],
    [{ sessionId: 's', eventName: 'x', eventProperties: [1, 2] }, '/eventProperties'],
    [{ sessionId: 's', eventName: 'x', timestamp: 'yesterday' }, '/timestamp'],
    [{ sessionId: 's', eventName: 'x', uuid: 'x'.repeat(129) }, '/uuid'],
    [{ sessionId: 's', eventName: 'x', uuid: 42 }, '/uuid'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/customEvent', body)
    expect(res.status).toBe(400)
    const answer = await res.json()
    expect(answer).toMatchObject({ success: false, error: { code: 'validation_failed' }, path })
  })
})

describe('POST /api/ingestion/customEvent/batch', () => {
  const batch = {
    sessionId: 'batch-1',
    endUserId: 'user-b',
    events: [
      { eventName: 'view', eventProperties: { page: '/' }, timestamp: Date.now() - 2000, uuid: '0190a4b4-3333-7000-8000-000000000001' },
      { eventName: 'click', timestamp: Date.now() - 1000, uuid: '0190a4b4-3333-7000-8000-000000000002' },
      { eventName: 'buy', uuid: '0190a4b4-3333-7000-8000-000000000003', extra: 'ignored' },
    ],
  }

  test('stores every event and answers accepted', async () => {
    const res = await core.post('/api/ingestion/customEvent/batch', batch)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 3 })
    const stored = await eventsOf('batch-1')
    expect(stored.map((e) => e.event_name)).toEqual(['view', 'click', 'buy'])
    expect(stored.every((e) => e.end_user_id === 'user-b')).toBe(true)
  })

  test('a retried batch is stored once', async () => {
    await core.post('/api/ingestion/customEvent/batch', batch)
    expect(await eventsOf('batch-1')).toHaveLength(3)
  })

  test('an event name longer than 1 KB is cut (with an ellipsis), not a reason to refuse the batch', async () => {
    const long = 'checkout step: '.repeat(100)
    const res = await core.post('/api/ingestion/customEvent/batch', { sessionId: 'batch-long', events: [{ eventName: 'before' }, { eventName: long }] })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 2, endUserId: expect.any(String) })
    const names = (await eventsOf('batch-long')).map((e) => e.event_name)
    expect(names).toContain('before')
    expect(names).toContain(`${long.slice(0, 1021)}…`)
  })

  test('ids that are not UUIDs and null optional fields: stored once however often the batch is sent, and once when one batch names an id twice', async () => {
    const events = [
      { eventName: 'first', uuid: 'client-7f3a:1', timestamp: null },
      { eventName: 'second', uuid: 'client-7f3a:2', timestamp: Date.now() - 500, eventProperties: null },
      { eventName: 'again', uuid: 'client-7f3a:2' },
      { eventName: 'no id', uuid: null },
    ]
    for (let i = 0; i < 3; i++) {
      const res = await core.post('/api/ingestion/customEvent/batch', { sessionId: 'batch-ids', endUserId: null, events })
      expect(res.status).toBe(200)
    }
    const stored = await eventsOf('batch-ids')
    const named = stored.filter((e) => e.event_name !== 'no id')
    expect(named.map((e) => e.uuid).sort()).toEqual([uuidV5('client-7f3a:1', core.project.projectId), uuidV5('client-7f3a:2', core.project.projectId)].sort())
    expect(stored.filter((e) => e.event_name === 'no id')).toHaveLength(3)
  })

  test('the failing item is named by its path', async () => {
    const res = await core.post('/api/ingestion/customEvent/batch', { sessionId: 's', events: [{ eventName: 'ok' }, { eventName: '' }] })
    expect(res.status).toBe(400)
    expect((await res.json()).path).toBe('/events/1/eventName')
    expect((await core.post('/api/ingestion/customEvent/batch', { sessionId: 's', events: [] })).status).toBe(400)
  })
})
