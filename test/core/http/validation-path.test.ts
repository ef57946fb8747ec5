import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { errorHandler } from '@sightline/core/http/errors'
import { Nullish } from '@sightline/core/ingest/shared/model'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const refusal = async (res: Response) => {
  expect(res.status).toBe(400)
  const body = (await res.json()) as { error: { code: string; message: string }; path: string }
  expect(body.error.code).toBe('validation_failed')
  expect(body.error.message.startsWith(`${body.path}: `)).toBe(true)
  return body
}

describe('the path of a validation failure names the deepest value that is wrong', () => {
  // Bodies as the routes of createApp are validated (normalize: 'typebox'), with the value-or-null
  // objects none of today's Elysia-validated routes has, so that what a future one reports is pinned.
  const app = new Elysia({ normalize: 'typebox' })
    .use(errorHandler(memoryLogger().log, () => new Map()))
    .post('/checkout', () => 'ok', {
      body: t.Object({ sessionId: t.String(), cart: Nullish(t.Object({ total: t.Number(), currency: Nullish(t.String()) })) }),
    })
    .post('/batch', () => 'ok', {
      body: t.Object({ items: t.Array(t.Object({ name: t.String(), origin: Nullish(t.Object({ file: t.String(), lines: Nullish(t.Array(t.Integer())) })) })) }),
    })
  const post = (path: string, body: unknown) => app.handle(new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))

  test.each([
    ['/checkout', { sessionId: 's', cart: { total: 'ten' } }, '/cart/total'],
    ['/checkout', { sessionId: 's', cart: { total: 10, currency: 5 } }, '/cart/currency'],
    ['/batch', { items: [{ name: 'a' }, { name: 'b', origin: { file: 7 } }] }, '/items/1/origin/file'],
    ['/batch', { items: [{ name: 'a', origin: { file: 'a.js', lines: [1, 'two'] } }] }, '/items/0/origin/lines/1'],
  ])('%s %j fails at %s', async (route, body, path) => {
    expect((await refusal(await post(route, body))).path).toBe(path)
  })

  test('a value-or-null field of the wrong kind is named itself; a valid body passes', async () => {
    expect((await refusal(await post('/checkout', { sessionId: 's', cart: 'full' }))).path).toBe('/cart')
    expect((await refusal(await post('/batch', { items: [{ name: 'a', origin: [] }] }))).path).toBe('/items/0/origin')
    expect((await post('/checkout', { sessionId: 's', cart: null })).status).toBe(200)
    expect((await post('/batch', { items: [{ name: 'a', origin: { file: 'a.js', lines: null } }] })).status).toBe(200)
  })
})

describe('the ingestion routes name their failing field as before', () => {
  test.each([
    // Validated by Elysia.
    ['/api/ingestion/customEvent/batch', { sessionId: 's', events: [{ eventName: 'a' }, { eventName: 'b', eventProperties: 'x' }] }, '/events/1/eventProperties'],
    ['/api/ingestion/customEvent/batch', { sessionId: 's', events: [{ eventName: 'a' }, { eventName: 'b', timestamp: 'now' }] }, '/events/1/timestamp'],
    ['/api/ingestion/customEvent/batch', { sessionId: 's', events: [{ eventName: 5 }] }, '/events/0/eventName'],
    ['/api/ingestion/heartbeat', { sessionId: 's', windowId: 5 }, '/windowId'],
    // Validated in the handler (asBatch), the same way.
    ['/api/ingestion/logs', { sessionId: 's', logs: [{ level: 'info', message: 'a', timestampMs: 1 }, { level: 'info', message: 'b', timestampMs: 1, stack: {} }] }, '/logs/1/stack'],
  ])('%s %j fails at %s', async (route, body, path) => {
    const answer = await refusal(await core.post(route, body))
    expect(answer.path).toBe(path)
  })
})

describe('free-form properties take any JSON object or null, and nothing else', () => {
  const routes: [route: string, body: (value: unknown) => object, path: string][] = [
    ['/api/ingestion/customEvent/batch', (value) => ({ sessionId: 'p', events: [{ eventName: 'a' }, { eventName: 'b', eventProperties: value }] }), '/events/1/eventProperties'],
    ['/api/ingestion/user', (value) => ({ userId: 'u-1', userAttributes: value }), '/userAttributes'],
    ['/api/ingestion/groupidentify', (value) => ({ groupType: 'company', groupKey: 'acme', groupProperties: value }), '/groupProperties'],
    // Validated in the handler (asBatch).
    ['/api/ingestion/network', (value) => ({ sessionId: 'p', errors: [{ requestId: 'r', url: '/a', method: 'GET', timestampMs: 1, attributes: value }] }), '/errors/0/attributes'],
  ]

  test.each(routes)('%s refuses a string, a number, true and an array at the field', async (route, body, path) => {
    for (const value of ['x', 5, true, [1, 2]]) {
      const answer = await refusal(await core.post(route, body(value)))
      expect(answer.path).toBe(path)
      expect(answer.error.message).toBe(`${path}: Expected an object or null`)
    }
  })

  test.each(routes)('%s takes null, {} and an object of any members, nested as deep as it likes', async (route, body) => {
    for (const value of [null, {}, { plan: 'pro', seats: 3, tags: ['a'], nested: { deeper: { yes: true, none: null } } }]) {
      const res = await core.post(route, body(value))
      expect(res.status).toBe(200)
    }
  })

  test('the members are stored as sent, nothing dropped', async () => {
    const properties = { plan: 'pro', seats: 3, tags: ['a', { b: 1 }], nested: { deeper: { yes: true, none: null } } }
    expect((await core.post('/api/ingestion/customEvent', { sessionId: 'p-stored', eventName: 'kept', eventProperties: properties })).status).toBe(200)
    const rows = await core.database.db.rows<{ properties: unknown }>(sql`select properties from events where session_id = 'p-stored'`)
    expect(rows.map((row) => row.properties)).toEqual([properties])
  })
})
