import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
const issue = async (issueId: string) =>
  (
    await rows<{ occurrences: number; affected_users: number; first_release: string | null; last_release: string | null }>(sql`
      select occurrences::int as occurrences, affected_users::int as affected_users, first_release, last_release from issues where issue_id = ${issueId}`)
  )[0]
const send = async (body: object, through: TestCore = core) => {
  const res = await through.post('/api/ingestion/errors', body, { key: core.key })
  expect(res.status).toBe(200)
  return (await res.json()) as { success: true; accepted: number; issues: string[]; endUserId?: string }
}
const report = (fn: string, extra: object = {}) => ({
  sessionId: `s-${fn}`,
  endUserId: 'u-1',
  name: 'TypeError',
  message: 'total is undefined',
  stack: `TypeError: total is undefined\n    at ${fn} (https://shop.example/assets/app.js:41:23)`,
  timestampMs: Date.now() - 60_000,
  ...extra,
})

describe('what an Issue row counts', () => {
  test('a fingerprint of `{{ default }}` alone is the computed grouping: the same Issue as no fingerprint', async () => {
    const [plain] = (await send(report('renderDefault'))).issues
    const [asDefault] = (await send(report('renderDefault', { fingerprint: ['{{ default }}'], timestampMs: Date.now() - 1_000 }))).issues
    const [spaced] = (await send(report('renderDefault', { fingerprint: ['{{default}}'], timestampMs: Date.now() - 2_000 }))).issues
    expect([asDefault, spaced]).toEqual([plain, plain])
    expect(await issue(plain)).toMatchObject({ occurrences: 3 })
    // With more than `{{ default }}` it is the client's grouping, apart from the computed one.
    const [extended] = (await send(report('renderDefault', { fingerprint: ['{{ default }}', 'eu'] }))).issues
    expect(extended).not.toBe(plain)
  })

  test("a report naming no end user is its session's end user's (made when it has none): stored with it and counted among the affected", async () => {
    const sessionId = 's-anonymous-report'
    const events = [{ type: 4, timestamp: Date.now() - 5_000, data: { href: 'https://shop.example/', width: 1, height: 1 } }]
    expect((await core.post('/api/ingestion/events', { sessionId, endUserId: 'known-user', windowId: 'w', events })).status).toBe(200)
    const { endUserId: _, ...anonymous } = report('renderAnonymous', { sessionId })
    const answer = await send(anonymous)
    expect(answer).toMatchObject({ endUserId: 'known-user' })
    const [issueId] = answer.issues
    expect(await issue(issueId)).toMatchObject({ occurrences: 1, affected_users: 1 })
    expect(await rows(sql`select end_user_id from error_events where issue_id = ${issueId}`)).toEqual([{ end_user_id: 'known-user' }])

    // Another report of the batch names the new session's end user: the one naming none is that user's too.
    const both = await send({ sessionId: 's-new-session', errors: [{ ...anonymous, sessionId: undefined, message: 'a' }, { ...report('renderAnonymous'), sessionId: undefined, endUserId: 'new-user' }] })
    expect(await rows(sql`select end_user_id from error_events where session_id = 's-new-session' order by end_user_id`)).toEqual([{ end_user_id: 'new-user' }, { end_user_id: 'new-user' }])
    expect(both).toMatchObject({ endUserId: 'new-user' })
    expect(await issue(both.issues[0])).toMatchObject({ occurrences: 3, affected_users: 2 })

    // A session without an end user gets one made (WIRE.md, Ids): answered, stored with the report and counted.
    const { endUserId: __, ...nobody } = report('renderNobody')
    const made = await send(nobody)
    expect(made).toMatchObject({ endUserId: expect.any(String) })
    const [lone] = made.issues
    expect(await rows(sql`select end_user_id from error_events where issue_id = ${lone}`)).toEqual([{ end_user_id: made.endUserId }])
    expect(await issue(lone)).toMatchObject({ occurrences: 1, affected_users: 1 })
  })

  test('first and last release are those of the earliest and latest occurrence that has one, in whatever order they come', async () => {
    const now = Date.now()
    // In one batch, the earliest occurrence without a release listed first.
    const [inBatch] = (await send({ sessionId: 's-rel', errors: [report('renderRelA', { timestampMs: now - 5_000 }), report('renderRelA', { timestampMs: now - 100, release: '1.9.0' })] })).issues
    expect(await issue(inBatch)).toMatchObject({ first_release: '1.9.0', last_release: '1.9.0' })
    // In one batch, the latest occurrence without a release listed first.
    const [latestFirst] = (await send({ sessionId: 's-rel', errors: [report('renderRelB', { timestampMs: now - 100 }), report('renderRelB', { timestampMs: now - 5_000, release: '1.9.0' })] })).issues
    expect(await issue(latestFirst)).toMatchObject({ first_release: '1.9.0', last_release: '1.9.0' })
    // In two commits: an Issue without a release takes the one an older occurrence, sent late, brings.
    const [late] = (await send(report('renderRelC', { timestampMs: now - 100 }))).issues
    await send(report('renderRelC', { timestampMs: now - 5_000, release: '1.9.0' }))
    expect(await issue(late)).toMatchObject({ first_release: '1.9.0', last_release: '1.9.0' })
    // By time, not by string: 1.10.0 after 1.9.0.
    const [ordered] = (await send({ sessionId: 's-rel', errors: [report('renderRelD', { timestampMs: now - 100, release: '1.10.0' }), report('renderRelD', { timestampMs: now - 5_000, release: '1.9.0' })] })).issues
    expect(await issue(ordered)).toMatchObject({ occurrences: 2, first_release: '1.9.0', last_release: '1.10.0' })
  })

  test('first and last release when occurrences without one come between, earlier or later, across commits', async () => {
    const now = Date.now()
    // The Issue's earliest occurrence names no release; an occurrence with a release older than the one stored comes later.
    const [first] = (await send(report('renderRelE', { timestampMs: now - 5_000 }))).issues
    await send(report('renderRelE', { timestampMs: now - 100, release: '2.0.0' }))
    await send(report('renderRelE', { timestampMs: now - 3_000, release: '1.0.0' }))
    expect(await issue(first)).toMatchObject({ occurrences: 3, first_release: '1.0.0', last_release: '2.0.0' })
    // The Issue's latest occurrence names no release; an occurrence with a release newer than the one stored comes later.
    const [last] = (await send(report('renderRelF', { timestampMs: now - 100 }))).issues
    await send(report('renderRelF', { timestampMs: now - 5_000, release: '1.0.0' }))
    await send(report('renderRelF', { timestampMs: now - 3_000, release: '2.0.0' }))
    expect(await issue(last)).toMatchObject({ occurrences: 3, first_release: '1.0.0', last_release: '2.0.0' })
    // A batch whose earliest (latest) occurrence names no release does not make its release the first (last).
    const [earlier] = (await send(report('renderRelG', { timestampMs: now - 3_000, release: '1.0.0' }))).issues
    await send({ sessionId: 's-rel', errors: [report('renderRelG', { sessionId: undefined, timestampMs: now - 5_000 }), report('renderRelG', { sessionId: undefined, timestampMs: now - 1_000, release: '2.0.0' })] })
    expect(await issue(earlier)).toMatchObject({ occurrences: 3, first_release: '1.0.0', last_release: '2.0.0' })
    const [later] = (await send(report('renderRelH', { timestampMs: now - 3_000, release: '2.0.0' }))).issues
    await send({ sessionId: 's-rel', errors: [report('renderRelH', { sessionId: undefined, timestampMs: now - 100 }), report('renderRelH', { sessionId: undefined, timestampMs: now - 5_000, release: '1.0.0' })] })
    expect(await issue(later)).toMatchObject({ occurrences: 3, first_release: '1.0.0', last_release: '2.0.0' })
  })

  test('many Issues in one batch, listed in opposite orders through two cores at once: no deadlock, every count exact, issues answered in report order', async () => {
    const second = await startCore({ database: core.database })
    try {
      const fns = Array.from({ length: 12 }, (_, i) => `renderMany${i}`)
      const bodies = Array.from({ length: 16 }, (_, round) => {
        const order = round % 2 ? [...fns].reverse() : fns
        return { sessionId: `s-many-${round}`, endUserId: `many-${round % 4}`, errors: order.map((fn, i) => report(fn, { sessionId: undefined, endUserId: undefined, timestampMs: 1_700_000_000_000 + round * 100 + i })) }
      })
      const answers = await Promise.all(bodies.map((body, i) => send(body, i % 2 ? second : core)))
      const ids = answers[0].issues
      expect(new Set(ids).size).toBe(fns.length)
      expect(answers[1].issues).toEqual([...ids].reverse())
      for (const issueId of ids) expect(await issue(issueId)).toMatchObject({ occurrences: 16, affected_users: 4 })
    } finally {
      await second.close()
    }
  })
})
