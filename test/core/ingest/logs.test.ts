import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const logsOf = (sessionId: string) =>
  rows<{ level: string; message: string; stack: string | null; url: string | null; end_user_id: string | null; user_agent: string | null; ts: string }>(
    sql`select level, message, stack, url, end_user_id, user_agent, (extract(epoch from timestamp) * 1000)::bigint::text as ts
        from logs where session_id = ${sessionId} order by timestamp, message`,
  )

describe('POST /api/ingestion/logs', () => {
  test('one entry in the fielded shape is stored with its session and end user', async () => {
    const timestampMs = Date.now() - 1000
    const res = await core.post('/api/ingestion/logs', {
      level: 'warn',
      message: 'slow render',
      stack: 'Error\n    at render (https://shop.example/app.js:1:2)',
      url: 'https://shop.example/cart',
      timestampMs,
      sessionId: 'log-1',
      endUserId: 'user-l',
      userAgent: 'Mozilla/5.0',
      somethingNew: true,
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    expect(await logsOf('log-1')).toEqual([
      {
        level: 'warn',
        message: 'slow render',
        stack: 'Error\n    at render (https://shop.example/app.js:1:2)',
        url: 'https://shop.example/cart',
        end_user_id: 'user-l',
        user_agent: 'Mozilla/5.0',
        ts: String(timestampMs),
      },
    ])
    expect(await rows(sql`select 1 from sessions where session_id = 'log-1' and end_user_id = 'user-l'`)).toHaveLength(1)
    expect(await rows(sql`select 1 from end_users where end_user_id = 'user-l'`)).toHaveLength(1)
  })

  test('one entry carrying a field of its own named `logs` (beyond WIRE.md) is that entry, the field ignored, not a batch refused', async () => {
    const timestampMs = Date.now() - 1000
    const res = await core.post('/api/ingestion/logs', { level: 'info', message: 'replayed', url: 'https://shop.example/', timestampMs, sessionId: 'log-own', endUserId: 'user-own', logs: ['a', 'b'] })
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    expect((await logsOf('log-own')).map((l) => l.message)).toEqual(['replayed'])
    // A batch is still a batch.
    const batch = await core.post('/api/ingestion/logs', { sessionId: 'log-own', logs: [{ level: 'info', message: 'second', url: null, timestampMs, sessionId: 'log-own', endUserId: 'user-own' }] })
    expect(await batch.json()).toEqual({ success: true, accepted: 1 })
  })

  test('a valid batch that also carries the fields of an entry at its top level is a batch: its entries are not dropped', async () => {
    const timestampMs = Date.now() - 1000
    const res = await core.post('/api/ingestion/logs', {
      sessionId: 'log-both',
      endUserId: 'user-both',
      level: 'info',
      message: 'defaults of a client',
      timestampMs,
      logs: [
        { level: 'warn', message: 'first', timestampMs },
        { level: 'error', message: 'second', timestampMs: timestampMs + 1 },
      ],
    })
    expect(await res.json()).toEqual({ success: true, accepted: 2 })
    expect((await logsOf('log-both')).map((l) => l.message)).toEqual(['first', 'second'])
  })

  test('a batch: entries inherit the batch session and end user, or name their own; a resend is stored once', async () => {
    const now = Date.now()
    const batch = {
      sessionId: 'log-2',
      endUserId: 'user-b',
      logs: [
        { level: 'debug', message: 'a', timestampMs: now - 3 },
        { level: 'info', message: 'b', timestampMs: now - 2, url: null },
        { level: 'log', message: 'c', timestampMs: now - 1, sessionId: 'log-2b', endUserId: 'user-c' },
        { level: 'error', message: 'd', timestampMs: now },
      ],
    }
    for (let i = 0; i < 2; i++) {
      const res = await core.post('/api/ingestion/logs', batch)
      expect(await res.json()).toEqual({ success: true, accepted: 4 })
    }
    expect((await logsOf('log-2')).map((l) => [l.level, l.message, l.end_user_id])).toEqual([
      ['debug', 'a', 'user-b'],
      ['info', 'b', 'user-b'],
      ['error', 'd', 'user-b'],
    ])
    expect((await logsOf('log-2b')).map((l) => [l.message, l.end_user_id])).toEqual([['c', 'user-c']])
  })

  test('the same line twice in one millisecond (a loop that warns) is two lines; a resend of the batch adds none', async () => {
    const timestampMs = Date.now()
    const line = { level: 'warn', message: 'price missing', url: 'https://shop.example/cart', timestampMs }
    const batch = { sessionId: 'log-twice', endUserId: 'user-twice', logs: [line, line, { ...line, message: 'other' }, line] }
    for (let i = 0; i < 2; i++) expect(await (await core.post('/api/ingestion/logs', batch)).json()).toEqual({ success: true, accepted: 4 })
    expect((await logsOf('log-twice')).map((l) => l.message)).toEqual(['other', 'price missing', 'price missing', 'price missing'])
  })

  test('a message over 32 KB is truncated on a character boundary, not refused; NUL dropped', async () => {
    const message = 'é'.repeat(40_000) + 'tail'
    const res = await core.post('/api/ingestion/logs', { level: 'log', message, timestampMs: Date.now(), sessionId: 'log-3', url: 'x\u0000y' })
    expect(res.status).toBe(200)
    const [stored] = await logsOf('log-3')
    expect(new TextEncoder().encode(stored.message).byteLength).toBeLessThanOrEqual(32 * 1024)
    expect(stored.message.endsWith('é…')).toBe(true)
    expect(stored.message.length).toBeGreaterThan(16_000)
    expect(stored.url).toBe('xy')
  })

  test.each([
    [{ level: 'log', message: 'x', timestampMs: 1 }, '/sessionId'],
    [{ level: 'trace', message: 'x', timestampMs: 1, sessionId: 's' }, '/level'],
    [{ level: 'log', timestampMs: 1, sessionId: 's' }, '/message'],
    [{ level: 'log', message: 'x', sessionId: 's' }, '/timestampMs'],
    [{ level: 'log', message: 'x', timestampMs: 'now', sessionId: 's' }, '/timestampMs'],
    [{ level: 'log', message: { text: 'x' }, timestampMs: 1, sessionId: 's' }, '/message'],
    [{ sessionId: 's', logs: [] }, '/logs'],
    [{ sessionId: 's', logs: [{ level: 'log', message: 'x', timestampMs: 1 }, { level: 'log', message: 'x' }] }, '/logs/1/timestampMs'],
    [{ sessionId: 'bad id', logs: [{ level: 'log', message: 'x', timestampMs: 1 }] }, '/sessionId'],
    [[{ level: 'log' }], '/'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/logs', body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'validation_failed', message: expect.any(String) }, path })
  })

  test('not JSON, no key, too large, wrong method', async () => {
    const notJson = await core.post('/api/ingestion/logs', '{"level":')
    expect(notJson.status).toBe(400)
    expect(await notJson.json()).toMatchObject({ success: false, error: { code: 'invalid_json' } })
    const noKey = await core.post('/api/ingestion/logs', { level: 'log', message: 'x', timestampMs: 1, sessionId: 's' }, { key: null })
    expect(noKey.status).toBe(401)
    expect(await noKey.json()).toMatchObject({ success: false, error: { code: 'missing_api_key' } })
    // Over the 1 MB limit of this route: refused whole (a message is cut only within a body that fits).
    const huge = await core.post('/api/ingestion/logs', { level: 'log', message: 'x'.repeat(1024 * 1024 + 1), timestampMs: 1, sessionId: 'log-big' })
    expect(huge.status).toBe(413)
    expect(await huge.json()).toMatchObject({ success: false, error: { code: 'payload_too_large' } })
    expect(await logsOf('log-big')).toEqual([])
    const get = await core.request('/api/ingestion/logs')
    expect(get.status).toBe(405)
    expect(await get.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } })
  })
})
