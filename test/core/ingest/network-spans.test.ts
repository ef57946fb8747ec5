import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const expectError = async (res: Response, status: number, code: string, path?: string) => {
  expect(res.status).toBe(status)
  const body = await res.json()
  expect(body).toMatchObject({ success: false, error: { code, message: expect.any(String) } })
  if (path) expect(body.path).toBe(path)
}

describe('POST /api/ingestion/network', () => {
  const failure = (requestId: string, extra: object = {}) => ({
    requestId,
    url: 'https://api.shop.example/cart?id=1',
    method: 'post',
    status: 503,
    statusText: 'Service Unavailable',
    duration: 812.5,
    timestampMs: Date.now() - 500,
    sessionId: 'net-1',
    endUserId: 'user-n',
    errorType: 'http_error',
    errorMessage: null,
    ...extra,
  })

  test('one entry in the fielded shape, every optional field too', async () => {
    const startTimeMs = Date.now() - 1400
    const res = await core.post(
      '/api/ingestion/network',
      failure('r-1', { errorName: 'HTTPError', startTimeMs, spanName: 'POST /cart', spanStatus: 'error', attributes: { retry: 2 } }),
    )
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    const [row] = await rows<Record<string, unknown>>(sql`
      select request_id, url, method, status, status_text, duration_ms, error_type, error_message, error_name, span_name, span_status, attributes,
        end_user_id, (extract(epoch from start_time) * 1000)::bigint::text as start
      from network_errors where session_id = 'net-1'`)
    expect(row).toEqual({
      request_id: 'r-1',
      url: 'https://api.shop.example/cart?id=1',
      method: 'POST',
      status: 503,
      status_text: 'Service Unavailable',
      duration_ms: 812.5,
      error_type: 'http_error',
      error_message: null,
      error_name: 'HTTPError',
      span_name: 'POST /cart',
      span_status: 'error',
      attributes: { retry: 2 },
      end_user_id: 'user-n',
      start: String(startTimeMs),
    })
  })

  test('one entry carrying a field of its own named `errors` (beyond WIRE.md) is that entry, the field ignored, not a batch refused', async () => {
    const res = await core.post('/api/ingestion/network', failure('r-own', { sessionId: 'net-own', errors: [{ attempt: 1 }] }))
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    expect(await core.database.db.rows(sql`select request_id from network_errors where session_id = 'net-own'`)).toEqual([{ request_id: 'r-own' }])
  })

  test('the batch form `{sessionId, errors}`; a network failure without a status; a resend is stored once', async () => {
    const batch = {
      sessionId: 'net-2',
      errors: [failure('r-1', { sessionId: undefined }), failure('r-2', { sessionId: undefined, status: null, statusText: null, errorType: 'network_error', errorMessage: 'Failed to fetch' })],
    }
    for (let i = 0; i < 2; i++) expect(await (await core.post('/api/ingestion/network', batch)).json()).toEqual({ success: true, accepted: 2 })
    const stored = await rows<{ request_id: string; status: number | null; error_message: string | null }>(
      sql`select request_id, status, error_message from network_errors where session_id = 'net-2' order by request_id`,
    )
    expect(stored).toEqual([
      { request_id: 'r-1', status: 503, error_message: null },
      { request_id: 'r-2', status: null, error_message: 'Failed to fetch' },
    ])
  })

  test('times in microseconds (a clock read in the wrong unit) are days ahead: clamped to the receive time, not refused', async () => {
    const before = Date.now()
    const micros = Date.now() * 1000
    const res = await core.post('/api/ingestion/network', failure('r-us', { sessionId: 'net-us', timestampMs: micros, startTimeMs: micros - 1_400_000 }))
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    const [row] = await rows<{ start: string; ts: string }>(sql`
      select (extract(epoch from start_time) * 1000)::bigint::text as start, (extract(epoch from timestamp) * 1000)::bigint::text as ts
      from network_errors where session_id = 'net-us'`)
    for (const ms of [row.start, row.ts]) expect(Number(ms)).toBeWithin(before - 1, Date.now() + 2)
  })

  test('a method of any length a page may give fetch is stored, not the reason to refuse the batch', async () => {
    const long = 'x-custom-method-for-a-legacy-rpc-endpoint'
    const batch = { sessionId: 'net-method', errors: [failure('m-1', { sessionId: undefined, method: long }), failure('m-2', { sessionId: undefined })] }
    expect(await (await core.post('/api/ingestion/network', batch)).json()).toEqual({ success: true, accepted: 2 })
    const stored = await rows<{ request_id: string; method: string }>(sql`select request_id, method from network_errors where session_id = 'net-method' order by request_id`)
    expect(stored).toEqual([
      { request_id: 'm-1', method: long.toUpperCase() },
      { request_id: 'm-2', method: 'POST' },
    ])
    const huge = { ...failure('m-3', { sessionId: 'net-method-huge' }), method: 'M'.repeat(5000) }
    expect((await core.post('/api/ingestion/network', huge)).status).toBe(200)
    const [{ length }] = await rows<{ length: number }>(sql`select octet_length(method) as length from network_errors where session_id = 'net-method-huge'`)
    expect(length).toBe(1024)
  })

  test.each([
    [{ ...failure('x'), requestId: undefined }, '/requestId'],
    [{ ...failure('x'), method: '' }, '/method'],
    [{ ...failure('x'), url: undefined }, '/url'],
    [{ ...failure('x'), status: 'bad' }, '/status'],
    [{ ...failure('x'), status: 99999 }, '/status'],
    [{ ...failure('x'), spanStatus: 'meh' }, '/spanStatus'],
    [{ ...failure('x'), attributes: 'x' }, '/attributes'],
    [{ sessionId: 's', errors: [{ ...failure('x'), duration: -1 }] }, '/errors/0/duration'],
  ])('validation: %j fails at %s', async (body, path) => {
    await expectError(await core.post('/api/ingestion/network', body), 400, 'validation_failed', path)
  })
})

describe('POST /api/ingestion/spans/batch', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const span = (spanId: string, extra: object = {}) => ({ traceId, spanId, name: 'GET /cart', startTimeMs: 1_700_000_000_000.25, endTimeMs: 1_700_000_000_120.75, ...extra })

  test('spans with every field, ids stored lowercase, duration computed; a resend is stored once', async () => {
    const body = {
      sessionId: 'span-1',
      endUserId: 'user-s',
      spans: [
        span('00F067AA0BA902B7', {
          kind: 'client',
          status: { code: 'error', message: 'timeout' },
          attributes: { 'http.method': 'GET' },
          events: [{ name: 'retry', timeMs: 1_700_000_000_050, attributes: { n: 1 } }],
        }),
        span('00f067aa0ba902b8', { parentSpanId: '00f067aa0ba902b7', name: 'render' }),
        span('00f067aa0ba902b9', { parentSpanId: '', endTimeMs: 1_700_000_000_000.25 }),
      ],
    }
    for (let i = 0; i < 2; i++) expect(await (await core.post('/api/ingestion/spans/batch', body)).json()).toEqual({ success: true, accepted: 3 })
    const stored = await rows<Record<string, unknown>>(sql`
      select span_id, parent_span_id, trace_id, kind, duration_ms, status_code, status_message, attributes, events, session_id, end_user_id
      from spans where trace_id = ${traceId} order by span_id`)
    expect(stored).toEqual([
      {
        span_id: '00f067aa0ba902b7',
        parent_span_id: null,
        trace_id: traceId,
        kind: 'client',
        duration_ms: 120.5,
        status_code: 'error',
        status_message: 'timeout',
        attributes: { 'http.method': 'GET' },
        events: [{ name: 'retry', timeMs: 1_700_000_000_050, attributes: { n: 1 } }],
        session_id: 'span-1',
        end_user_id: 'user-s',
      },
      expect.objectContaining({ span_id: '00f067aa0ba902b8', parent_span_id: '00f067aa0ba902b7', kind: 'internal', status_code: 'unset' }),
      expect.objectContaining({ span_id: '00f067aa0ba902b9', parent_span_id: null, duration_ms: 0 }),
    ])
    expect(await rows(sql`select 1 from sessions where session_id = 'span-1'`)).toHaveLength(1)
  })

  test('a span event is stored as its name, time and attributes: other keys are dropped, those named like members of every object too', async () => {
    const events = [JSON.parse('{"name":"retry","timeMs":1700000000050,"extra":1,"constructor":"c","toString":"t","valueOf":{"v":1},"hasOwnProperty":2}')]
    const res = await core.post('/api/ingestion/spans/batch', { sessionId: 'span-keys', endUserId: 'user-span-keys', spans: [span('6666666666666601', { traceId: '7'.repeat(32), events })] })
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    const [row] = await rows<{ events: unknown }>(sql`select events from spans where trace_id = ${'7'.repeat(32)}`)
    expect(row.events).toEqual([{ name: 'retry', timeMs: 1_700_000_000_050 }])
  })

  test('a span or span event name of any length (a long URL path) is stored cut to 1 KB, not refused with its batch', async () => {
    const long = 'GET /items/' + 'x'.repeat(5000)
    const body = { spans: [span('4444444444444444', { traceId: 'c'.repeat(32), name: long, events: [{ name: long, timeMs: 1_700_000_000_050 }] })] }
    expect(await (await core.post('/api/ingestion/spans/batch', body)).json()).toEqual({ success: true, accepted: 1 })
    const [stored] = await rows<{ name: string; events: { name: string }[] }>(sql`select name, events from spans where trace_id = ${'c'.repeat(32)}`)
    expect([stored.name, stored.events[0].name].map((name) => [name.slice(0, 11), Buffer.byteLength(name), name.endsWith('…')])).toEqual([
      ['GET /items/', 1024, true],
      ['GET /items/', 1024, true],
    ])
  })

  test('times more than 24 h ahead are clamped, the end and span events too; the end never before the start, the duration that of the stored times', async () => {
    const DAY = 86_400_000
    const before = Date.now()
    const past = before - 60_000
    const ahead = before + 3 * DAY
    const spans = [
      // Only the end is days ahead: it is the receive time.
      span('5555555555555501', { startTimeMs: past, endTimeMs: ahead, events: [{ name: 'late', timeMs: ahead }, { name: 'in time', timeMs: past + 10 }] }),
      // A start within the 24 h, an end past them: the end would fall before the start, so it is the start.
      span('5555555555555502', { startTimeMs: before + DAY / 2, endTimeMs: ahead }),
      // A clock days ahead: the span moves to the receive time and keeps its length and its events' offsets.
      span('5555555555555503', { startTimeMs: ahead, endTimeMs: ahead + 250, events: [{ name: 'mid', timeMs: ahead + 100 }] }),
      // ... unless its length reaches past the 24 h too.
      span('5555555555555504', { startTimeMs: ahead, endTimeMs: ahead + 2 * DAY }),
      // An event long before a start days ahead would move before 1970, a time no client may send: it is 1970.
      span('5555555555555505', { startTimeMs: ahead, endTimeMs: ahead, events: [{ name: 'early', timeMs: 0 }] }),
    ]
    expect(await (await core.post('/api/ingestion/spans/batch', { spans: spans.map((s) => ({ ...s, traceId: 'd'.repeat(32) })) })).json()).toEqual({ success: true, accepted: 5 })
    const after = Date.now()
    const stored = await rows<{ span_id: string; start: number; end: number; duration_ms: number; events: { name: string; timeMs: number }[] | null }>(sql`
      select span_id, round(extract(epoch from start_time) * 1000)::float8 as start, round(extract(epoch from end_time) * 1000)::float8 as "end", duration_ms, events
      from spans where trace_id = ${'d'.repeat(32)} order by span_id`)
    const received = (ms: number) => ms >= before && ms <= after
    for (const row of stored) {
      expect(row.end).toBeGreaterThanOrEqual(row.start)
      expect(row.end).toBeLessThanOrEqual(after + DAY)
      expect(row.duration_ms).toBe(row.end - row.start)
    }
    const [onlyEnd, endBeforeStart, moved, tooLong, early] = stored
    expect([onlyEnd.start, received(onlyEnd.end)]).toEqual([past, true])
    expect(received(onlyEnd.events![0].timeMs)).toBe(true)
    expect(onlyEnd.events![1].timeMs).toBe(past + 10)
    expect([endBeforeStart.start, endBeforeStart.end, endBeforeStart.duration_ms]).toEqual([before + DAY / 2, before + DAY / 2, 0])
    expect([received(moved.start), moved.duration_ms, moved.events![0].timeMs - moved.start]).toEqual([true, 250, 100])
    expect([received(tooLong.start), tooLong.duration_ms]).toEqual([true, 0])
    expect([received(early.start), early.events![0].timeMs]).toEqual([true, 0])
  })

  test('times with fractions of a millisecond (a browser clock): duration_ms is exactly the stored end less the stored start', async () => {
    // performance.timeOrigin + performance.now(): fractions finer than the microseconds timestamptz keeps.
    const spans = [
      span('7777777777777701', { startTimeMs: 1712345678901.2345, endTimeMs: 1712345679013.5678 }),
      span('7777777777777702', { startTimeMs: 1712345678901.0004, endTimeMs: 1712345678901.0006 }),
      span('7777777777777703', { startTimeMs: 1712345678901.1, endTimeMs: 1712345678901.3 }),
    ]
    expect(await (await core.post('/api/ingestion/spans/batch', { spans: spans.map((s) => ({ ...s, traceId: '9'.repeat(32) })) })).json()).toEqual({ success: true, accepted: 3 })
    const stored = await rows<{ duration_ms: number; stored: number }>(sql`
      select duration_ms, (extract(epoch from end_time - start_time) * 1000)::float8 as stored from spans where trace_id = ${'9'.repeat(32)} order by span_id`)
    expect(stored.map((row) => row.duration_ms)).toEqual(stored.map((row) => row.stored))
  })

  test('null in every optional field is taken as absent; an all-zero parent is no parent (a root span)', async () => {
    const body = {
      sessionId: null,
      endUserId: null,
      spans: [
        span('6666666666666601', { traceId: 'e'.repeat(32), parentSpanId: null, kind: null, status: null, attributes: null, events: null }),
        span('6666666666666602', {
          traceId: 'e'.repeat(32),
          parentSpanId: '0000000000000000',
          status: { code: 'ok', message: null },
          events: [{ name: 'x', timeMs: 1_700_000_000_010, attributes: null }],
        }),
      ],
    }
    expect(await (await core.post('/api/ingestion/spans/batch', body)).json()).toEqual({ success: true, accepted: 2 })
    expect(await rows(sql`select span_id, parent_span_id, kind, status_code, status_message, attributes, events, session_id from spans where trace_id = ${'e'.repeat(32)} order by span_id`)).toEqual([
      { span_id: '6666666666666601', parent_span_id: null, kind: 'internal', status_code: 'unset', status_message: null, attributes: null, events: null, session_id: null },
      {
        span_id: '6666666666666602',
        parent_span_id: null,
        kind: 'internal',
        status_code: 'ok',
        status_message: null,
        attributes: null,
        events: [{ name: 'x', timeMs: 1_700_000_000_010, attributes: null }],
        session_id: null,
      },
    ])
  })

  test('a span named as its own parent is a root: stored without a parent, whatever the case of the ids', async () => {
    const traceId = 'f1'.repeat(16)
    const spans = [span('00F067AA0BA902C1', { traceId, parentSpanId: '00f067aa0ba902c1' }), span('00f067aa0ba902c2', { traceId, parentSpanId: '00f067aa0ba902c1' })]
    expect(await (await core.post('/api/ingestion/spans/batch', { spans })).json()).toEqual({ success: true, accepted: 2 })
    expect(await rows(sql`select span_id, parent_span_id from spans where trace_id = ${traceId} order by span_id`)).toEqual([
      { span_id: '00f067aa0ba902c1', parent_span_id: null },
      { span_id: '00f067aa0ba902c2', parent_span_id: '00f067aa0ba902c1' },
    ])
  })

  test('spans without a session are stored without one', async () => {
    const res = await core.post('/api/ingestion/spans/batch', { spans: [span('1111111111111111', { traceId: 'a'.repeat(32) })] })
    expect(res.status).toBe(200)
    expect(await rows(sql`select session_id from spans where trace_id = ${'a'.repeat(32)}`)).toEqual([{ session_id: null }])
  })

  test('an end user named without a session is created, as on every route that names one', async () => {
    const res = await core.post('/api/ingestion/spans/batch', { endUserId: 'span-only-user', spans: [span('5555555555555555', { traceId: 'f'.repeat(32) })] })
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    expect(await rows(sql`select session_id, end_user_id from spans where trace_id = ${'f'.repeat(32)}`)).toEqual([{ session_id: null, end_user_id: 'span-only-user' }])
    expect(
      await rows(sql`select (extract(epoch from last_seen_at) * 1000)::bigint::text as seen from end_users where end_user_id = 'span-only-user'`),
    ).toEqual([{ seen: '1700000000000' }])
  })

  test.each([
    [{ spans: [span('00f067aa0ba902b7', { traceId: 'xyz' })] }, '/spans/0/traceId'],
    [{ spans: [span('00f067aa0ba902b7', { traceId: '0'.repeat(32) })] }, '/spans/0/traceId'],
    [{ spans: [span('00f067aa0ba902b7', { traceId: traceId + 'a' })] }, '/spans/0/traceId'],
    [{ spans: [span('00f067aa0ba902b')] }, '/spans/0/spanId'],
    [{ spans: [span('0000000000000000')] }, '/spans/0/spanId'],
    [{ spans: [span('00f067aa0ba902b7', { parentSpanId: 'nope' })] }, '/spans/0/parentSpanId'],
    [{ spans: [span('00f067aa0ba902b7'), span('00f067aa0ba902b8', { endTimeMs: 1 })] }, '/spans/1/endTimeMs'],
    [{ spans: [span('00f067aa0ba902b7', { kind: 'weird' })] }, '/spans/0/kind'],
    [{ spans: [span('00f067aa0ba902b7', { status: { code: 'bad' } })] }, '/spans/0/status/code'],
    [{ spans: [span('00f067aa0ba902b7', { events: [{ name: 'x', timeMs: 'soon' }] })] }, '/spans/0/events/0/timeMs'],
    [{ spans: [span('00f067aa0ba902b7', { name: '' })] }, '/spans/0/name'],
    [{ spans: [] }, '/spans'],
    [{ sessionId: 's' }, '/spans'],
  ])('validation: %j fails at %s', async (body, path) => {
    await expectError(await core.post('/api/ingestion/spans/batch', body), 400, 'validation_failed', path)
  })

  test('a refused batch stores none of its spans', async () => {
    await core.post('/api/ingestion/spans/batch', { spans: [span('2222222222222222', { traceId: 'b'.repeat(32) }), span('3333333333333333', { endTimeMs: 0 })] })
    expect(await rows(sql`select 1 from spans where trace_id = ${'b'.repeat(32)}`)).toHaveLength(0)
  })
})
