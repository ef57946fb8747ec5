import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

// Every integer field of every route, on the validation each has (Elysia's or the handler's).
const SECRET = 'internal-secret-for-tests-0123456789'
const TS = 1_700_000_000_000
let core: TestCore
beforeAll(async () => {
  core = await startCore({ env: { INTERNAL_SECRET: SECRET } })
})
afterAll(() => core.close())

const send = (path: string, body: object) =>
  core.request(`/api/ingestion${path}`, { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body: JSON.stringify(body) })

describe('integers are JSON numbers', () => {
  const refusedAt = async (res: Response, path: string) => {
    const answer = await res.json()
    expect([res.status, answer.error?.code, answer.path]).toEqual([400, 'validation_failed', path])
  }
  const network = (status: unknown) => ({ requestId: `r-${status}`, url: 'https://api.test/', method: 'GET', status, duration: 1, timestampMs: TS, sessionId: 'bs-int', errorType: 'http' })
  const frame = (lineno: unknown, colno: unknown) => ({ filename: 'https://shop.test/app.js', function: 'f', lineno, colno })
  const stored = async () => ({
    network: (await core.database.db.rows(sql`select 1 from network_errors where session_id = 'bs-int'`)).length,
    errors: (await core.database.db.rows(sql`select 1 from error_events where session_id = 'bs-int'`)).length,
    chunks: (await core.database.db.rows(sql`select 1 from replay_chunks where session_id = 'bs-int'`)).length,
    findings: (await core.database.db.rows(sql`select 1 from scan_findings where file = 'bs-int.ts'`)).length,
  })

  test('a number in a string is refused where an integer belongs, at its field, in range or not; nothing stored', async () => {
    // A string in range too: in the handlers' validation it went on as a string, stored as text in JSON columns.
    await refusedAt(await send('/network', network('500')), '/status')
    await refusedAt(await send('/network', network('99999999999999')), '/status')
    await refusedAt(await send('/errors', { sessionId: 'bs-int', name: 'E', message: 'm', timestampMs: TS, frames: [frame('7', 1)] }), '/frames/0/lineno')
    await refusedAt(await send('/errors', { sessionId: 'bs-int', name: 'E', message: 'm', timestampMs: TS, frames: [frame(7, '99999999999999999999')] }), '/frames/0/colno')
    for (const seq of ['7', '99999999999999999', -1, 1.5]) {
      await refusedAt(await send('/events', { sessionId: 'bs-int', seq, events: [{ type: 3, timestamp: TS, data: {} }] }), '/seq')
    }
    const finding = (line: unknown) => ({ projectId: core.project.projectId, findings: [{ ruleId: 'r', severity: 'low', file: 'bs-int.ts', line, message: 'm' }] })
    const internal = (body: object) => core.request('/api/internal/scan-findings', { method: 'POST', headers: { 'x-internal-secret': SECRET }, body: JSON.stringify(body) })
    await refusedAt(await internal(finding('99999999999999')), '/findings/0/line')
    expect(await stored()).toEqual({ network: 0, errors: 0, chunks: 0, findings: 0 })
  })

  test('the same fields as numbers are stored as numbers', async () => {
    expect((await send('/network', network(500))).status).toBe(200)
    expect((await send('/errors', { sessionId: 'bs-int', name: 'E', message: 'm', timestampMs: TS, frames: [frame(7, 3)] })).status).toBe(200)
    expect((await send('/events', { sessionId: 'bs-int', seq: 7, events: [{ type: 3, timestamp: TS, data: {} }] })).status).toBe(200)
    const frames = await core.database.db.rows<{ frames: { lineno: unknown; colno: unknown }[] }>(sql`select frames from error_events where session_id = 'bs-int'`)
    expect(frames[0].frames.map(({ lineno, colno }) => ({ lineno, colno }))).toEqual([{ lineno: 7, colno: 3 }])
    expect(await core.database.db.rows(sql`select seq from replay_chunks where session_id = 'bs-int'`)).toEqual([{ seq: 7 }])
  })
})
