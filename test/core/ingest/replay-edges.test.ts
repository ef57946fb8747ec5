import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

// Edge cases of /events found sound in a bug hunt, kept so that they stay so.

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

interface Row {
  seq: number | null
  first_ms: string
  last_ms: string
  event_count: number
  has_full_snapshot: boolean
  data: Uint8Array
}
const chunksOf = (sessionId: string) =>
  core.database.db.rows<Row>(sql`
    select seq, (extract(epoch from first_timestamp) * 1000)::text as first_ms, (extract(epoch from last_timestamp) * 1000)::text as last_ms,
      event_count, has_full_snapshot, data
    from replay_chunks where session_id = ${sessionId}`)
const storedBody = (row: Row) => JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(row.data instanceof Uint8Array ? row.data : new Uint8Array(row.data as ArrayBuffer))))
const send = (text: string, { gzip = false } = {}) =>
  core.request('/api/ingestion/events', {
    method: 'POST',
    headers: { authorization: `Bearer ${core.key}`, ...(gzip && { 'content-encoding': 'gzip' }) },
    body: gzip ? gzipSync(text) : text,
  })
const t0 = Date.now() - 60_000
const isRrweb = (e: any) =>
  e !== null && typeof e === 'object' && !Array.isArray(e) && 'data' in e && Number.isInteger(e.type) && e.type >= 0 && e.type <= 6 && Number.isFinite(e.timestamp) && e.timestamp >= 0

describe('/events edge cases', () => {
  test('random bodies (spacing, member order, dropped items, a key, gzip, NUL and lone surrogates) are stored as sent, less the dropped items and the key', async () => {
    // mulberry32: the same bodies on every run.
    let seed = 99
    const pick = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0
      let x = Math.imul(seed ^ (seed >>> 15), seed | 1)
      x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
      return ((x ^ (x >>> 14)) >>> 0) % n
    }
    const space = () => [' ', '', '\n ', ''][pick(4)]
    const items = [
      `{"type":3,"timestamp":${t0},"data":{}}`,
      `{ "data" : 1 , "type" : 2 , "timestamp" : ${t0 + 7} }`,
      `{"type":4,"timestamp":${t0 + 3},"data":{"href":"h\\u0000\\ud800"}}`,
      `{"type":5,"timestamp":${t0}.25,"data":"\\u0000"}`,
      'null', '"x"', '[]', `{"type":9,"timestamp":${t0},"data":0}`, `{"type":3,"timestamp":-1,"data":0}`, `{"type":3,"timestamp":1e400,"data":0}`,
    ]
    for (let n = 0; n < 150; n++) {
      const sessionId = `edge-random-${n}`
      const members = [`"sessionId":"${sessionId}"`, `"events":[${space()}${Array.from({ length: 1 + pick(6) }, () => items[pick(items.length)]).join(`${space()},${space()}`)}${space()}]`]
      if (pick(2)) members.push(`"apiKey":"${core.key}"`)
      if (pick(2)) members.push(`"seq":${pick(5)}`)
      if (pick(2)) members.push(`"windowId":${pick(2) ? 'null' : '"w"'}`)
      if (pick(2)) members.push(`"automaticProperties":{"a":"\\u0000","b":null}`)
      for (let i = members.length - 1; i > 0; i--) {
        const j = pick(i + 1)
        ;[members[i], members[j]] = [members[j], members[i]]
      }
      const text = `${space()}{${space()}${members.join(`${space()},${space()}`)}${space()}}${space()}`
      const res = await send(text, { gzip: pick(2) === 1 })
      const body = JSON.parse(text)
      const kept = body.events.filter(isRrweb)
      expect({ text, status: res.status, answer: await res.json() }).toEqual({ text, status: 200, answer: { success: true, accepted: kept.length, dropped: body.events.length - kept.length, endUserId: expect.any(String) } })
      const rows = await chunksOf(sessionId)
      if (kept.length === 0) {
        expect(rows).toHaveLength(0)
        continue
      }
      const { apiKey: _key, ...rest } = body
      const times = kept.map((e: { timestamp: number }) => e.timestamp)
      expect({ text, stored: storedBody(rows[0]) }).toEqual({ text, stored: { ...rest, events: kept } })
      expect(rows[0].event_count).toBe(kept.length)
      expect(Number(rows[0].first_ms)).toBeCloseTo(Math.min(...times), 2)
      expect(Number(rows[0].last_ms)).toBeCloseTo(Math.max(...times), 2)
      expect(rows[0].has_full_snapshot).toBe(kept.some((e: { type: number }) => e.type === 2))
    }
  })

  test('events out of time order: the chunk spans the least and greatest time; the entry URL is the earliest meta event', async () => {
    const events = [
      { type: 4, timestamp: t0 + 50, data: { href: 'https://shop.test/second' } },
      { type: 3, timestamp: t0 + 90, data: { source: 1 } },
      { type: 4, timestamp: t0 + 10, data: { href: 'https://shop.test/first' } },
      { type: 3, timestamp: t0, data: { source: 2 } },
    ]
    expect((await send(JSON.stringify({ sessionId: 'edge-order', events }))).status).toBe(200)
    const [row] = await chunksOf('edge-order')
    expect([Number(row.first_ms), Number(row.last_ms)]).toEqual([t0, t0 + 90])
    const [session] = await core.database.db.rows<{ entry_url: string }>(sql`select entry_url from sessions where session_id = 'edge-order'`)
    expect(session.entry_url).toBe('https://shop.test/first')
  })

  test('a resend that differs in seq, in the order of the fields beside events or in compression is the same chunk, kept with its first seq', async () => {
    const events = `[{"type":2,"timestamp":${t0},"data":{}},{"type":3,"timestamp":${t0 + 1},"data":{"source":1}}]`
    expect((await send(`{"sessionId":"edge-resend","windowId":"w","seq":4,"events":${events}}`)).status).toBe(200)
    expect((await send(`{"events":${events},"seq":5,"windowId":"w","sessionId":"edge-resend"}`, { gzip: true })).status).toBe(200)
    expect((await send(`{"sessionId":"edge-resend","windowId":"w","events":${events},"apiKey":"${core.key}"}`)).status).toBe(200)
    const rows = await chunksOf('edge-resend')
    expect(rows.map((r) => r.seq)).toEqual([4])
  })

  test('an event nested 100,000 levels deep is stored (the scan does not recurse; the database never parses replay data)', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    const res = await send(`{"sessionId":"edge-deep","events":[{"type":4,"timestamp":${t0},"data":{"x":${deep},"href":"https://shop.test/"}}]}`)
    expect(await res.json()).toEqual({ success: true, accepted: 1, dropped: 0, endUserId: expect.any(String) })
    expect(await chunksOf('edge-deep')).toHaveLength(1)
  })
})
