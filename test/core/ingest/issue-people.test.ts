import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * An Issue's affected users are people: the devices (end users) that auth-aware identify found to be
 * one person count once, as the dashboard shows them as one.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const signIn = async (userId: string, email: string) => {
  const res = await core.post('/api/ingestion/user/auth', { userId, userAttributes: { email }, sessionId: `s-${userId}`, authFields: ['email'] })
  expect(res.status).toBe(200)
  return ((await res.json()) as { endUserId: string }).endUserId
}
const report = (fn: string, endUserId: string | undefined, at: number) => ({
  sessionId: `s-${endUserId}`,
  ...(endUserId && { endUserId }),
  name: 'TypeError',
  message: 'total is undefined',
  stack: `TypeError: total is undefined\n    at ${fn} (https://shop.example/assets/app.js:41:23)`,
  timestampMs: at,
})
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/errors', body)
  expect(res.status).toBe(200)
  return ((await res.json()) as { issues: string[] }).issues
}
const counted = async (issueId: string) => {
  const [issue] = await core.database.db.rows<{ affected_users: number; occurrences: number }>(
    sql`select affected_users::int as affected_users, occurrences::int as occurrences from issues where issue_id = ${issueId}`,
  )
  const users = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from issue_end_users where issue_id = ${issueId} order by end_user_id`)
  return { ...issue, users: users.map((u) => u.end_user_id) }
}

describe('affected users of an Issue are people', () => {
  test("two devices of one person (aliased before the reports) count once, in separate requests and in one batch", async () => {
    expect(await signIn('ann-laptop', 'ann@shop.test')).toBe('ann-laptop')
    expect(await signIn('ann-phone', 'ann@shop.test')).toBe('ann-laptop')
    const now = Date.now()
    const [issueId] = await send(report('renderPeople', 'ann-laptop', now - 3_000))
    expect(await send(report('renderPeople', 'ann-phone', now - 2_000))).toEqual([issueId])
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['ann-laptop'] })

    // In one batch, the alias listed first, and someone else beside them.
    const [batched] = await send({ sessionId: 's-batch', errors: [report('renderBatch', 'ann-phone', now - 1_000), report('renderBatch', 'ann-laptop', now - 900), report('renderBatch', 'bo', now - 800)] })
    expect(await counted(batched)).toEqual({ occurrences: 3, affected_users: 2, users: ['ann-laptop', 'bo'] })
  })

  test("concurrent reports of a person's two devices count once", async () => {
    await signIn('cy-laptop', 'cy@shop.test')
    await signIn('cy-phone', 'cy@shop.test')
    const now = Date.now()
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => send(report('renderConcurrent', i % 2 ? 'cy-phone' : 'cy-laptop', now - 1_000 + i))),
    )
    expect(await counted(answers[0][0])).toEqual({ occurrences: 8, affected_users: 1, users: ['cy-laptop'] })
  })

  test("a report naming no end user, of a session whose end user is an alias, counts the alias's person", async () => {
    await signIn('di-laptop', 'di@shop.test')
    await signIn('di-phone', 'di@shop.test')
    const now = Date.now()
    const [issueId] = await send(report('renderSession', 'di-laptop', now - 2_000))
    // The session `s-di-phone` has end user di-phone (signIn named it); the report does not.
    expect(await send({ ...report('renderSession', undefined, now - 1_000), sessionId: 's-di-phone' })).toEqual([issueId])
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['di-laptop'] })
    expect(await core.database.db.rows(sql`select end_user_id from error_events where issue_id = ${issueId} order by end_user_id`)).toEqual([
      { end_user_id: 'di-laptop' },
      { end_user_id: 'di-phone' },
    ])
  })
})
