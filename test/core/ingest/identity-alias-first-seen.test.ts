import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

// README: end users have a first and last seen. A person is the end user every device of it aliases
// to, so a device seen before the person was, signing in as it, makes the person first seen then.

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const HOUR = 3_600_000
const firstSeen = async (endUserId: string) =>
  Number(
    (
      await core.database.db.rows<{ first: string }>(
        sql`select (extract(epoch from first_seen_at) * 1000)::bigint::text as first from end_users where project_id = ${core.project.projectId} and end_user_id = ${endUserId}`,
      )
    )[0].first,
  )
const seenAt = async (sessionId: string, endUserId: string, timestamp: number) =>
  expect((await core.post('/api/ingestion/customEvent', { sessionId, endUserId, eventName: 'page', timestamp })).status).toBe(200)
const signIn = async (userId: string, email: string) => {
  const res = await core.post('/api/ingestion/user/auth', { userId, userAttributes: { email }, authFields: ['email'] })
  expect(res.status).toBe(200)
  return ((await res.json()) as { endUserId: string }).endUserId
}

describe("a person's first seen", () => {
  test('an older device that becomes an alias of the person makes it first seen when the device was', async () => {
    const old = Date.now() - 5 * HOUR
    await seenAt('af-laptop-s', 'af-laptop', old)
    await seenAt('af-phone-s', 'af-phone', Date.now() - HOUR)
    expect(await signIn('af-phone', 'ann@af.test')).toBe('af-phone')
    expect(await signIn('af-laptop', 'ann@af.test')).toBe('af-phone')
    expect(await firstSeen('af-phone')).toBe(old)
  })

  test('a newer device that becomes an alias leaves the first seen as it was', async () => {
    const phone = Date.now() - 5 * HOUR
    await seenAt('ag-phone-s', 'ag-phone', phone)
    expect(await signIn('ag-phone', 'ben@ag.test')).toBe('ag-phone')
    await seenAt('ag-laptop-s', 'ag-laptop', Date.now() - HOUR)
    expect(await signIn('ag-laptop', 'ben@ag.test')).toBe('ag-phone')
    expect(await firstSeen('ag-phone')).toBe(phone)
  })
})
