import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * WIRE.md: /errors answers `issues: [issueId...]`, the Issue each report was counted into. A resend
 * is stored once, as it was first stored: its answer names the Issue of that stored occurrence, even
 * when the resend would group elsewhere now (its release's source maps were uploaded meanwhile, or
 * the client changed the report but kept its uuid). Never an Issue that does not exist.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/errors', body)
  expect(res.status).toBe(200)
  return (await res.json()) as { accepted: number; issues: string[] }
}
const issueIdsStored = async () => (await rows<{ issue_id: string }>(sql`select issue_id::text from issues`)).map((r) => r.issue_id)
const STACK = 'TypeError: x is undefined\n    at a (https://shop.example/assets/app.js:1:1)\n    at b (https://shop.example/assets/app.js:1:5)'
const MAP = { version: 3, sources: ['src/cart.ts'], names: [], mappings: 'AAAA,IAIA', sourcesContent: ['function renderTotal() {\n  throw 1\n}\nfunction other() {}\n'] }

describe('a resend answers the Issue it was first counted into', () => {
  test('resent after its release\'s source maps were uploaded: the stored Issue, not the one it would group into now', async () => {
    const report = { sessionId: 'resend-map', endUserId: 'user-rm', name: 'TypeError', message: 'x is undefined', stack: STACK, release: 'shop@9', timestampMs: Date.now() - 1000, uuid: '0190a4b4-6666-7000-8000-000000000001' }
    const [first] = (await send(report)).issues
    const upload = await core.post('/api/ingestion/sourcemaps', { release: 'shop@9', files: [{ name: 'assets/app.js.map', content: MAP }] })
    expect(upload.status).toBe(200)
    const again = await send(report)
    expect(again).toMatchObject({ accepted: 1, issues: [first] })
    expect(await rows(sql`select issue_id::text from error_events where session_id = 'resend-map'`)).toEqual([{ issue_id: first }])
    expect(await issueIdsStored()).toContain(first)
  })

  test('the same uuid twice in one batch with other words: stored once, and both answer its Issue', async () => {
    const uuid = '0190a4b4-6666-7000-8000-000000000002'
    const report = (message: string) => ({ sessionId: 'resend-batch', name: 'Error', message, timestampMs: Date.now() - 1000, uuid })
    const answer = await send({ sessionId: 'resend-batch', errors: [report('first words'), report('other words entirely')] })
    const stored = await rows<{ issue_id: string }>(sql`select issue_id::text from error_events where session_id = 'resend-batch'`)
    expect(stored).toHaveLength(1)
    expect(answer.issues).toEqual([stored[0].issue_id, stored[0].issue_id])
    // And resent alone with yet other words, the same.
    expect((await send(report('third words'))).issues).toEqual([stored[0].issue_id])
    const known = await issueIdsStored()
    for (const issueId of answer.issues) expect(known).toContain(issueId)
  })
})
