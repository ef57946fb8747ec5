import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { decodeChunk } from '@sightline/core/ingest/replay/encode'
import { parseUserAgent } from '@sightline/core/ingest/sessions/user-agent'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const ms = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000)::bigint::text`)

interface ChunkRow {
  project_id: string
  window_id: string
  content_hash: string
  seq: number | null
  first_ms: string
  last_ms: string
  event_count: number
  has_full_snapshot: boolean
  raw_bytes: number
  data: Uint8Array
}
const chunksOf = (sessionId: string) =>
  rows<ChunkRow>(sql`
    select project_id::text, window_id, content_hash, seq, ${ms('first_timestamp')} as first_ms, ${ms('last_timestamp')} as last_ms,
      event_count, has_full_snapshot, raw_bytes, data
    from replay_chunks where session_id = ${sessionId} order by first_timestamp, seq`)
const sessionOf = async (sessionId: string) =>
  (await rows<Record<string, unknown>>(sql`
    select *, ${ms('started_at')} as started_ms, ${ms('last_activity_at')} as last_ms from sessions where session_id = ${sessionId}`))[0]

const bytesOf = (data: unknown) => (data instanceof Uint8Array ? data : new Uint8Array(data as ArrayBuffer))
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1'
const t0 = Date.now() - 60_000

const meta = (timestamp: number, href: string) => ({ type: 4, timestamp, data: { href, width: 1280, height: 720 } })
const full = (timestamp: number) => ({ type: 2, timestamp, data: { node: { type: 0, childNodes: [], id: 1 }, initialOffset: { left: 0, top: 0 } } })
const move = (timestamp: number, x: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x, y: 10, id: 1, timeOffset: 0 }] } })

describe('POST /api/ingestion/events', () => {
  test('stores the fielded shape: the chunk compressed with every field, and what the session records', async () => {
    const events = [meta(t0, 'https://shop.test/landing?utm=x'), full(t0 + 5), move(t0 + 900, 1), { type: 5, timestamp: t0 + 950, data: { tag: 'note', payload: { a: 1 } } }]
    const body = {
        sessionId: 'rp-1',
        endUserId: 'rp-user',
        windowId: 'win-a',
        seq: 0,
        events,
        automaticProperties: { referrer: 'https://search.test/?q=shop', screen: { width: 390, height: 844 }, language: 'de-DE', timezone: 'Europe/Berlin' },
        sdkVersion: '2.3.1',
        unknownField: [1, 2, 3],
      }
    const res = await core.post('/api/ingestion/events', body, { headers: { 'user-agent': IPHONE } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 4, dropped: 0 })

    const [chunk] = await chunksOf('rp-1')
    expect(chunk).toMatchObject({
      project_id: core.project.projectId,
      window_id: 'win-a',
      seq: 0,
      first_ms: String(t0),
      last_ms: String(t0 + 950),
      event_count: 4,
      has_full_snapshot: true,
      raw_bytes: Buffer.byteLength(JSON.stringify(body)),
    })
    expect(chunk.content_hash).toMatch(/^[0-9a-f]{32}$/)
    // Stored as sent: the events, and the session's fields beside them.
    expect(decodeChunk(bytesOf(chunk.data))).toEqual(events)
    expect(JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(bytesOf(chunk.data))))).toEqual(body)

    expect(await sessionOf('rp-1')).toMatchObject({
      end_user_id: 'rp-user',
      environment: 'development',
      started_ms: String(t0),
      last_ms: String(t0 + 950),
      entry_url: 'https://shop.test/landing?utm=x',
      referrer: 'https://search.test/?q=shop',
      user_agent: IPHONE,
      browser: 'Mobile Safari',
      browser_version: '17.4',
      os: 'iOS',
      os_version: '17.4',
      device_type: 'mobile',
      device_vendor: 'Apple',
      device_model: 'iPhone',
      automatic_properties: { referrer: 'https://search.test/?q=shop', screen: { width: 390, height: 844 }, language: 'de-DE', timezone: 'Europe/Berlin' },
      window_ids: ['win-a'],
      sdk_version: '2.3.1',
      geo: null,
    })
    expect(await rows(sql`select end_user_id from end_users where end_user_id = 'rp-user'`)).toHaveLength(1)
  })

  test('later chunks extend the session: activity, windows and properties merge; the first meta event stays the entry URL', async () => {
    const send = (body: object) => core.post('/api/ingestion/events', { sessionId: 'rp-2', ...body })
    expect((await send({ windowId: 'w1', seq: 0, events: [meta(t0 + 1000, 'https://a.test/first'), full(t0 + 1001)], automaticProperties: { language: 'en' } })).status).toBe(200)
    expect((await send({ windowId: 'w1', seq: 1, events: [meta(t0 + 5000, 'https://a.test/second'), move(t0 + 6000, 3)] })).status).toBe(200)
    expect((await send({ windowId: 'w0', events: [move(t0 + 7000, 4)], automaticProperties: { timezone: 'UTC' } })).status).toBe(200)
    // A chunk that arrives late but was recorded first moves the start and the entry URL back.
    expect((await send({ windowId: 'w1', events: [meta(t0 + 500, 'https://a.test/zero')] })).status).toBe(200)

    const session = await sessionOf('rp-2')
    expect(session).toMatchObject({
      started_ms: String(t0 + 500),
      last_ms: String(t0 + 7000),
      entry_url: 'https://a.test/zero',
      // In the order the windows came (see firstWindows).
      window_ids: ['w1', 'w0'],
      automatic_properties: { language: 'en', timezone: 'UTC' },
    })
    const chunks = await chunksOf('rp-2')
    expect(chunks.map((c) => [c.window_id, c.seq, c.event_count, c.has_full_snapshot])).toEqual([
      ['w1', null, 1, false],
      ['w1', 0, 2, true],
      ['w1', 1, 2, false],
      ['w0', null, 1, false],
    ])
  })

  test("the first page's chunk arriving after later pages' (it waited offline) still makes the entry URL and referrer, though an event started the session earlier", async () => {
    const send = (path: string, body: object) => core.post(path, { sessionId: 'rp-late', ...body })
    const page = (n: number, at: number, referrer: string) => ({ windowId: 'w', events: [meta(at, `https://late.test/page-${n}`), full(at + 1)], automaticProperties: { referrer } })
    expect((await send('/api/ingestion/customEvent', { eventName: 'opened', timestamp: t0 })).status).toBe(200)
    expect((await send('/api/ingestion/events', page(3, t0 + 9000, 'https://late.test/page-2'))).status).toBe(200)
    expect((await send('/api/ingestion/events', page(2, t0 + 5000, 'https://late.test/page-1'))).status).toBe(200)
    expect(await sessionOf('rp-late')).toMatchObject({ entry_url: 'https://late.test/page-2', referrer: 'https://late.test/page-1' })
    expect((await send('/api/ingestion/events', page(1, t0 + 100, 'https://search.test/'))).status).toBe(200)
    expect(await sessionOf('rp-late')).toMatchObject({ started_ms: String(t0), entry_url: 'https://late.test/page-1', referrer: 'https://search.test/' })
    // In one commit the same: the earliest page wins, whichever request comes first.
    const together = ['rp-late-2', 'rp-late-2'].map((sessionId, i) =>
      core.post('/api/ingestion/events', { sessionId, ...page(2 - i, t0 + 5000 - i * 4900, i ? 'https://search.test/' : 'https://late.test/page-1') }),
    )
    expect((await Promise.all(together)).map((res) => res.status)).toEqual([200, 200])
    expect(await sessionOf('rp-late-2')).toMatchObject({ entry_url: 'https://late.test/page-1', referrer: 'https://search.test/' })
  })

  test("the referrer stays the entry page's when an earlier chunk without a meta event shares its commit, as when they come one after the other", async () => {
    // Page 1's later chunk (no meta event; its meta chunk still waits offline) and page 2's first chunk.
    const pageOne = { windowId: 'w', events: [move(t0 + 50, 1)], automaticProperties: { referrer: 'https://search.test/' } }
    const pageTwo = { windowId: 'w', events: [meta(t0 + 5000, 'https://late.test/page-2'), move(t0 + 5001, 2)], automaticProperties: { referrer: 'https://late.test/page-1' } }
    for (const body of [pageOne, pageTwo]) expect((await core.post('/api/ingestion/events', { sessionId: 'rp-ref-1', ...body })).status).toBe(200)
    const together = await Promise.all([pageOne, pageTwo].map((body) => core.post('/api/ingestion/events', { sessionId: 'rp-ref-2', ...body })))
    expect(together.map((res) => res.status)).toEqual([200, 200])
    for (const sessionId of ['rp-ref-1', 'rp-ref-2'])
      expect(await sessionOf(sessionId)).toMatchObject({ started_ms: String(t0 + 50), entry_url: 'https://late.test/page-2', referrer: 'https://late.test/page-1' })
  })

  test("a later page under another user agent (a phone's desktop site, then its own) leaves the session one browser, OS and device: the first user agent's", async () => {
    const DESKTOP_SITE = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36'
    const PHONE = 'Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36'
    const page = (n: number, userAgent: string) => ({ body: { windowId: 'w', events: [move(t0 + n * 1000, n)] }, headers: { 'user-agent': userAgent } })
    const send = (sessionId: string, { body, headers }: ReturnType<typeof page>) => core.post('/api/ingestion/events', { sessionId, ...body }, { headers })
    const columns = (userAgent: string) => {
      const parsed = parseUserAgent(userAgent)!
      return { user_agent: userAgent, browser: parsed.browser, browser_version: parsed.browserVersion, os: parsed.os, os_version: parsed.osVersion,
        device_type: parsed.deviceType, device_vendor: parsed.deviceVendor, device_model: parsed.deviceModel }
    }
    for (const p of [page(1, DESKTOP_SITE), page(2, PHONE)]) expect((await send('rp-ua-1', p)).status).toBe(200)
    expect(await sessionOf('rp-ua-1')).toMatchObject(columns(DESKTOP_SITE))
    // At once (one commit or two, in either order): one of the two, whole.
    expect((await Promise.all([page(1, DESKTOP_SITE), page(2, PHONE)].map((p) => send('rp-ua-2', p)))).map((res) => res.status)).toEqual([200, 200])
    const together = await sessionOf('rp-ua-2')
    expect(together).toMatchObject(columns(together.user_agent as string))
  })

  test('invalid items are dropped and counted; the rest is stored', async () => {
    const good = [meta(t0, 'https://b.test/'), move(t0 + 10, 1)]
    const bad = [null, 'text', 42, [], {}, { type: 3, timestamp: 'now', data: {} }, { type: 9, timestamp: t0, data: {} }, { type: 1.5, timestamp: t0, data: {} },
      { type: 3, timestamp: -1, data: {} }, { type: 3, timestamp: t0 }, { timestamp: t0, data: {} }]
    const res = await core.post('/api/ingestion/events', { sessionId: 'rp-3', events: [bad[0], good[0], ...bad.slice(1), good[1]] })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 2, dropped: bad.length, endUserId: expect.any(String) })
    const [chunk] = await chunksOf('rp-3')
    expect(chunk.event_count).toBe(2)
    expect(chunk.window_id).toBe('')
    expect(decodeChunk(bytesOf(chunk.data))).toEqual(good)
  })

  test('a half emoji (lone surrogate) in automaticProperties does not cost the chunk: stored, with U+FFFD in the session', async () => {
    const body = `{"sessionId":"rp-half","events":[${JSON.stringify(move(t0, 1))}],"automaticProperties":{"title":"Sale \\ud83d"}}`
    const res = await core.post('/api/ingestion/events', body)
    expect(res.status).toBe(200)
    expect(await chunksOf('rp-half')).toHaveLength(1)
    expect((await sessionOf('rp-half')).automatic_properties).toEqual({ title: 'Sale \uFFFD' })
  })

  test('a key sent in the body is not stored with the chunk', async () => {
    const events = [full(t0), move(t0 + 1, 2)]
    const res = await core.post('/api/ingestion/events', { sessionId: 'rp-key', apiKey: core.key, events }, { key: null })
    expect(res.status).toBe(200)
    const [chunk] = await chunksOf('rp-key')
    const stored = new TextDecoder().decode(Bun.zstdDecompressSync(bytesOf(chunk.data)))
    expect(stored).not.toContain(core.key)
    expect(JSON.parse(stored)).toEqual({ sessionId: 'rp-key', events })
  })

  test('a chunk with no valid event stores no chunk but still records the session', async () => {
    const before = Date.now()
    const res = await core.post('/api/ingestion/events', { sessionId: 'rp-4', events: [{ nope: true }], automaticProperties: { language: 'fr' } })
    expect(await res.json()).toEqual({ success: true, accepted: 0, dropped: 1, endUserId: expect.any(String) })
    expect((await core.post('/api/ingestion/events', { sessionId: 'rp-4', events: [] })).status).toBe(200)
    expect(await chunksOf('rp-4')).toHaveLength(0)
    const session = await sessionOf('rp-4')
    expect(Number(session.started_ms)).toBeGreaterThanOrEqual(before - 1)
    expect(session.automatic_properties).toEqual({ language: 'fr' })
  })

  test('an sdkVersion of any length does not cost the chunk: stored, the session keeping its first 2,048 characters', async () => {
    const sdkVersion = `3.0.0+build.${'a1'.repeat(1500)}`
    const res = await core.post('/api/ingestion/events', { sessionId: 'rp-sdk', events: [meta(t0, 'https://shop.test/'), full(t0 + 1)], sdkVersion })
    expect(await res.json()).toEqual({ success: true, accepted: 2, dropped: 0, endUserId: expect.any(String) })
    expect(await chunksOf('rp-sdk')).toHaveLength(1)
    expect((await sessionOf('rp-sdk')).sdk_version).toBe(sdkVersion.slice(0, 2048))
  })

  test('a retried chunk is stored once; the same events in another window or session are another chunk', async () => {
    const body = { sessionId: 'rp-5', windowId: 'w', seq: 3, events: [full(t0), move(t0 + 1, 5)] }
    for (let i = 0; i < 3; i++) expect(await (await core.post('/api/ingestion/events', body)).json()).toEqual({ success: true, accepted: 2, dropped: 0, endUserId: expect.any(String) })
    await Promise.all(Array.from({ length: 5 }, () => core.post('/api/ingestion/events', body)))
    expect(await chunksOf('rp-5')).toHaveLength(1)
    await core.post('/api/ingestion/events', { ...body, windowId: 'other' })
    await core.post('/api/ingestion/events', { ...body, sessionId: 'rp-5b' })
    // Resent another way (a beacon with the key in the body, gzip-free text): still the same chunk.
    const beacon = await core.request('/api/ingestion/events', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ apiKey: core.key, ...body, sdkVersion: '1' }) })
    expect(beacon.status).toBe(200)
    await core.post('/api/ingestion/events', { ...body, events: [full(t0), move(t0 + 2, 6)] })
    expect(await chunksOf('rp-5')).toHaveLength(3)
    expect(await chunksOf('rp-5b')).toHaveLength(1)
  })

  test('chunks whose events have the same types and times but other data are two chunks: both stored', async () => {
    // Two large events of one millisecond, each alone in its chunk once a payload is split.
    const first = { sessionId: 'rp-5c', windowId: 'w', seq: 1, events: [move(t0, 1)] }
    const second = { ...first, seq: 2, events: [move(t0, 2)] }
    for (const body of [first, second, first, second]) expect((await core.post('/api/ingestion/events', body)).status).toBe(200)
    expect((await chunksOf('rp-5c')).map((c) => decodeChunk(bytesOf(c.data)))).toEqual([[move(t0, 1)], [move(t0, 2)]])
    // Without windowId (older clients), two tabs of one session share window '': still two chunks.
    await core.post('/api/ingestion/events', { sessionId: 'rp-5d', events: [move(t0, 3)] })
    await core.post('/api/ingestion/events', { sessionId: 'rp-5d', events: [move(t0, 4)] })
    expect(await chunksOf('rp-5d')).toHaveLength(2)
  })

  test('a retried chunk with dropped items is stored once, known by the events it keeps', async () => {
    const body = { sessionId: 'rp-5e', windowId: 'w', events: [full(t0), { type: 3 }, move(t0 + 1, 5)] }
    for (let i = 0; i < 2; i++) expect(await (await core.post('/api/ingestion/events', body)).json()).toEqual({ success: true, accepted: 2, dropped: 1, endUserId: expect.any(String) })
    // The same kept events sent without the invalid item: the same chunk.
    await core.post('/api/ingestion/events', { ...body, events: [full(t0), move(t0 + 1, 5)] })
    const chunks = await chunksOf('rp-5e')
    expect(chunks).toHaveLength(1)
    expect(decodeChunk(bytesOf(chunks[0].data))).toEqual([full(t0), move(t0 + 1, 5)])
  })

  test('a time more than a day ahead is clamped in the columns; the events keep what was recorded', async () => {
    const future = Date.now() + 3 * 86_400_000
    const before = Date.now()
    await core.post('/api/ingestion/events', { sessionId: 'rp-6', events: [move(future, 1)] })
    const [chunk] = await chunksOf('rp-6')
    expect(Number(chunk.last_ms)).toBeGreaterThanOrEqual(before - 1)
    expect(Number(chunk.last_ms)).toBeLessThanOrEqual(Date.now() + 1)
    expect(decodeChunk(bytesOf(chunk.data))).toEqual([move(future, 1)])
  })

  test('a gzip body and a beacon (text/plain, key in the body) are stored alike', async () => {
    const body = JSON.stringify({ sessionId: 'rp-7', apiKey: core.key, events: [full(t0), move(t0 + 2, 9)] })
    const zipped = await core.request('/api/ingestion/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: `Bearer ${core.key}` },
      body: gzipSync(body),
    })
    expect(zipped.status).toBe(200)
    const beacon = await core.request('/api/ingestion/events', { method: 'POST', headers: { 'content-type': 'text/plain;charset=UTF-8' }, body: body.replace('rp-7', 'rp-7b') })
    expect(beacon.status).toBe(200)
    expect(await chunksOf('rp-7')).toHaveLength(1)
    expect(await chunksOf('rp-7b')).toHaveLength(1)
  })

  test('large chunks are stored compressed', async () => {
    const events = Array.from({ length: 4000 }, (_, i) => move(t0 + i * 16, i % 1440))
    const res = await core.post('/api/ingestion/events', { sessionId: 'rp-8', events })
    expect(res.status).toBe(200)
    const [stored] = await rows<{ raw: number; packed: number }>(sql`select raw_bytes as raw, length(data) as packed from replay_chunks where session_id = 'rp-8'`)
    expect(stored.raw).toBe(Buffer.byteLength(JSON.stringify({ sessionId: 'rp-8', events })))
    expect(stored.packed).toBeLessThan(stored.raw / 8)
  })

  const sendText = (text: string | Uint8Array, headers: Record<string, string> = {}) =>
    core.request('/api/ingestion/events', { method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json', ...headers }, body: typeof text === 'string' ? text : new Uint8Array(text) })
  const storedText = async (sessionId: string) => new TextDecoder().decode(Bun.zstdDecompressSync(bytesOf((await chunksOf(sessionId))[0].data)))

  test('the chunk is stored as the bytes it came as: spacing, escapes, member order, fields the server does not read', async () => {
    const text = `{ "events" : [ {"type":4,"timestamp":${t0},"data":{"href":"https://s.test/caf\\u00e9"}} ,\n {"timestamp":${t0 + 5},"data":{"source":1,"text":"\\"hi\\""},"type":3} ],\n "sessionId":"rp-raw", "extra": {"a":[1, 2.50]} }`
    const res = await sendText(text)
    expect(await res.json()).toEqual({ success: true, accepted: 2, dropped: 0, endUserId: expect.any(String) })
    expect(await storedText('rp-raw')).toBe(text)
    expect((await sessionOf('rp-raw')).entry_url).toBe('https://s.test/caf\u00e9')
  })

  test('dropped items and a key in the body are cut out of those bytes; what is kept stays as sent', async () => {
    const kept = [`{ "type" : 3, "timestamp" : ${t0}, "data" : { "x" : 1 } }`, `{"type":3,"timestamp":${t0 + 1},"data":null}`]
    const text = `{"sessionId":"rp-cut", "apiKey":"${core.key}","events":[ ${kept[0]}, {"type":3,"timestamp":-1,"data":{}}, "junk", ${kept[1]} ], "seq": 7}`
    const res = await core.request('/api/ingestion/events', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: text })
    expect(await res.json()).toEqual({ success: true, accepted: 2, dropped: 2, endUserId: expect.any(String) })
    expect(await storedText('rp-cut')).toBe(`{"sessionId":"rp-cut","events":[${kept.join(',')}],"seq": 7}`)
    expect((await chunksOf('rp-cut'))[0].seq).toBe(7)
  })

  test('a body that is not JSON is refused with 400 invalid_json, sent plain or gzipped; JSON that is not an object fails validation', async () => {
    for (const text of ['{"sessionId":"rp-bad","events":[', '{"sessionId":"rp-bad","events":[1,]}', '{"sessionId":"rp-bad","events":[]} trailing', '']) {
      for (const body of [text, gzipSync(text)]) {
        const res = await sendText(body, body instanceof Uint8Array ? { 'content-encoding': 'gzip' } : {})
        expect(res.status).toBe(400)
        expect((await res.json()).error.code).toBe('invalid_json')
      }
    }
    const array = await sendText('[{"type":3,"timestamp":1,"data":1}]')
    expect(array.status).toBe(400)
    expect((await array.json()).error.code).toBe('validation_failed')
    expect(await chunksOf('rp-bad')).toHaveLength(0)
  })

  test('a key in the header that is unknown is refused before the body is read: no turn of the replay gate is spent on it', async () => {
    // A body that does not end until the client goes away: answered in time only if it is not read.
    const streams: ReadableStreamDefaultController<Uint8Array>[] = []
    const body = () => new ReadableStream<Uint8Array>({ start: (c) => void (streams.push(c), c.enqueue(new TextEncoder().encode('{"sessionId":"rp-x","events":['))) })
    const send = (key: string) =>
      core.request('/api/ingestion/events', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-length': '4000000' }, body: body(), duplex: 'half' } as RequestInit)
    try {
      const answer = await Promise.race([send('sl_dev_unknown0000000000000000000000'), Bun.sleep(3000).then(() => null)])
      expect(answer?.status).toBe(401)
      expect(await answer!.json()).toMatchObject({ success: false, error: { code: 'invalid_api_key' } })
      // A known key's body is read as ever.
      expect(await Promise.race([send(core.key), Bun.sleep(300).then(() => 'still reading')])).toBe('still reading')
    } finally {
      for (const stream of streams) stream.error(new Error('the client went away'))
    }
  })

  test('more than 100,000 events are refused at /events once the key is known (401 first without one)', async () => {
    const text = `{"sessionId":"rp-many","events":[${Array(100_001).fill('0').join(',')}]}`
    const res = await sendText(text)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' }, path: '/events' })
    const keyless = await core.request('/api/ingestion/events', { method: 'POST', body: text })
    expect(keyless.status).toBe(401)
    expect((await sendText(`{"sessionId":"rp-many","events":[${Array(100_000).fill('0').join(',')}]}`)).status).toBe(200)
    expect(await chunksOf('rp-many')).toHaveLength(0)
  })

  test.each([
    [{ events: [] }, '/sessionId'],
    [{ sessionId: 'ok' }, '/events'],
    [{ sessionId: 'ok', events: { 0: {} } }, '/events'],
    [{ sessionId: 'ok', events: [], windowId: 'has space' }, '/windowId'],
    [{ sessionId: 'ok', events: [], seq: -1 }, '/seq'],
    [{ sessionId: 'ok', events: [], seq: 1.5 }, '/seq'],
    [{ sessionId: 'ok', events: [], automaticProperties: 'x' }, '/automaticProperties'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/events', body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'validation_failed' }, path })
  })
})
