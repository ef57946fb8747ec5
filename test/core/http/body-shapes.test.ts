import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

// Bodies of a shape no route takes, and fields no route reads, on every public route as createApp
// serves them: the answer follows from WIRE.md's rules, whichever reader or validator the route has.
let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const TS = 1_700_000_000_000
const MAP = { version: 3, file: 'app.js', sources: ['app.ts'], names: [], mappings: 'AAAA' }
/** A valid body for each ingestion route. */
const ROUTES: [string, object][] = [
  ['/init', { sessionId: 'bs-init', endUserId: 'bs-user' }],
  ['/events', { sessionId: 'bs-replay', events: [{ type: 3, timestamp: TS, data: { source: 1 } }] }],
  ['/user', { userId: 'bs-user', userAttributes: { plan: 'pro' }, sessionId: 'bs-id' }],
  ['/user/auth', { userId: 'bs-auth', userAttributes: { email: 'a@shop.test' }, sessionId: 'bs-id', authFields: ['email'] }],
  ['/customEvent', { sessionId: 'bs-event', eventName: 'e' }],
  ['/customEvent/batch', { sessionId: 'bs-batch', events: [{ eventName: 'a' }] }],
  ['/groupidentify', { endUserId: 'bs-user', groupType: 'company', groupKey: 'k' }],
  ['/ip-info', { sessionId: 'bs-ip', ip: '8.8.8.8' }],
  ['/logs', { level: 'warn', message: 'm', url: 'https://shop.test/', timestampMs: TS, sessionId: 'bs-log', endUserId: null }],
  ['/network', { requestId: 'r', url: 'https://api.test/', method: 'GET', status: 500, statusText: null, duration: 1, timestampMs: TS, sessionId: 'bs-net', endUserId: null, errorType: 'http', errorMessage: null }],
  ['/spans/batch', { sessionId: 'bs-span', spans: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name: 'GET /', startTimeMs: TS, endTimeMs: TS + 1 }] }],
  ['/errors', { sessionId: 'bs-error', name: 'TypeError', message: 'm', timestampMs: TS }],
  ['/sourcemaps', { release: 'bs@1', files: [{ name: 'app.js.map', content: MAP }] }],
  ['/heartbeat', { sessionId: 'bs-live', windowId: 'w' }],
  ['/session-end', { sessionId: 'bs-live', windowId: 'w' }],
]

const send = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  core.request(`/api/ingestion${path}`, { method: 'POST', headers: { authorization: `Bearer ${core.key}`, ...headers }, body })

describe('JSON that is not an object', () => {
  test('null, as any other value that is not an object, is a validation failure of the whole body, not "not valid JSON": plain, long, or gzipped', async () => {
    // Past 512 bytes a body is walked for its depth (http/json.ts); gzip takes the parser's other path.
    const texts = ['null', `null${' '.repeat(600)}`, '5', `[${' '.repeat(600)}]`]
    for (const [path] of ROUTES) {
      for (const text of texts) {
        for (const [body, headers] of [[text, {}], [gzipSync(text), { 'content-encoding': 'gzip' }]] as const) {
          const res = await send(path, body, headers)
          const answer = await res.json()
          expect([path, text.trim(), 'content-encoding' in headers, res.status, answer.error?.code, answer.path]).toEqual([
            path,
            text.trim(),
            'content-encoding' in headers,
            400,
            'validation_failed',
            '/',
          ])
        }
      }
    }
  })
})

describe('unknown fields are ignored, whatever their names', () => {
  /** Names of members every object inherits: a validator that asks `name in properties` takes them for declared fields. */
  const INHERITED = '"__proto__":{"polluted":1},"constructor":1,"toString":"x","valueOf":null,"hasOwnProperty":[],"isPrototypeOf":{},'

  test('a field named like a member every object inherits (constructor, toString, __proto__) does not cost the request, on any route', async () => {
    for (const [path, body] of ROUTES) {
      const res = await send(path, JSON.stringify(body).replace(/^\{/, `{${INHERITED}`))
      expect([path, res.status]).toEqual([path, 200])
    }
  })

  test('stored as without them, sent plain, gzipped or as a beacon (text/plain, key in the body)', async () => {
    const body = (n: number) => JSON.stringify({ sessionId: 'bs-inherited', eventName: `e${n}`, eventProperties: { n } }).replace(/^\{/, `{${INHERITED}`)
    expect((await send('/customEvent', body(1))).status).toBe(200)
    expect((await send('/customEvent', gzipSync(body(2)), { 'content-encoding': 'gzip' })).status).toBe(200)
    const beacon = body(3).replace(/^\{/, `{"apiKey":${JSON.stringify(core.key)},`)
    expect((await core.request('/api/ingestion/customEvent', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: beacon })).status).toBe(200)
    const rows = await core.database.db.rows<{ name: string; properties: unknown }>(
      sql`select event_name as name, properties from events where session_id = 'bs-inherited' order by event_name`,
    )
    expect(rows).toEqual([1, 2, 3].map((n) => ({ name: `e${n}`, properties: { n } })))
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})
