import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * The tracker sends logs (and error reports) in batches of at most 50 (TELEMETRY_BATCH_MAX). A page
 * that warns the same line 60 times in one millisecond (a loop) sends two batches: 50 equal lines,
 * then 10. Those 10 are new lines, not a resend of the first batch, and are stored (a 200 means every
 * item is committed); a resend of either batch still adds none.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const count = async (table: 'logs' | 'error_events', sessionId: string) =>
  (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from ${sql.raw(table)} where session_id = ${sessionId}`))[0].n
const post = async (path: string, body: object, accepted: number) => {
  const res = await core.post(path, body)
  expect(res.status).toBe(200)
  expect(((await res.json()) as { accepted: number }).accepted).toBe(accepted)
}

describe('equal items of one millisecond split over two requests', () => {
  test('logs: a loop that warns 60 times is 60 lines; resends add none', async () => {
    const line = { level: 'warn', message: 'price missing', url: 'https://shop.example/cart', timestampMs: Date.now() - 1000 }
    const first = { sessionId: 'loop-logs', endUserId: 'user-loop', logs: Array.from({ length: 50 }, () => line) }
    const second = { sessionId: 'loop-logs', endUserId: 'user-loop', logs: Array.from({ length: 10 }, () => line) }
    await post('/api/ingestion/logs', first, 50)
    await post('/api/ingestion/logs', second, 10)
    expect(await count('logs', 'loop-logs')).toBe(60)
    await post('/api/ingestion/logs', second, 10)
    await post('/api/ingestion/logs', first, 50)
    expect(await count('logs', 'loop-logs')).toBe(60)
  })

  test('logs: the 51st line alone, equal to the 50 before it, is stored too', async () => {
    const line = { level: 'warn', message: 'again', url: 'https://shop.example/', timestampMs: Date.now() - 1000 }
    await post('/api/ingestion/logs', { sessionId: 'loop-one', logs: Array.from({ length: 50 }, () => line) }, 50)
    await post('/api/ingestion/logs', { sessionId: 'loop-one', logs: [line] }, 1)
    expect(await count('logs', 'loop-one')).toBe(51)
  })

  test('error reports without a uuid: the same, 3 then 2', async () => {
    const report = { name: 'Error', message: 'tick failed', url: 'https://shop.example/', timestampMs: Date.now() - 1000 }
    const first = { sessionId: 'loop-errors', errors: [report, report, report] }
    const second = { sessionId: 'loop-errors', errors: [report, report] }
    await post('/api/ingestion/errors', first, 3)
    await post('/api/ingestion/errors', second, 2)
    await post('/api/ingestion/errors', first, 3)
    expect(await count('error_events', 'loop-errors')).toBe(5)
  })
})
