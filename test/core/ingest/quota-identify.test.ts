import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { countedEvents, startCore, type TestCore } from '../../helpers/core'

// README: an item resent by a retry or from a tracker's offline outbox is counted once. An identify
// carries no id of its own: a resend is one that changes nothing stored, and counts nothing.

describe('identifies count once against the monthly limit', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const usage = () => countedEvents(core)
  const sent = async (path: string, body: object) => expect((await core.post(`/api/ingestion${path}`, body)).status).toBe(200)

  test('/user: a resent identify counts once; one that changes an attribute counts', async () => {
    const before = await usage()
    const identify = { userId: 'u-resend', sessionId: 's-resend', userAttributes: { email: 'a@x.test', plan: 'free' } }
    for (let i = 0; i < 3; i++) await sent('/user', identify)
    expect(await usage()).toBe(before + 1)
    await sent('/user', { ...identify, userAttributes: { plan: 'pro' } })
    expect(await usage()).toBe(before + 2)
    // What it says is all stored already (email as first sent, plan as just changed).
    await sent('/user', { ...identify, userAttributes: { email: 'a@x.test', plan: 'pro' } })
    expect(await usage()).toBe(before + 2)
  })

  test('/user: the first identify of a new end user counts, even without attributes', async () => {
    const before = await usage()
    await sent('/user', { userId: 'u-empty', userAttributes: {} })
    await sent('/user', { userId: 'u-empty', userAttributes: {} })
    expect(await usage()).toBe(before + 1)
  })

  test('/user/auth: a resent sign-in counts once, on either device', async () => {
    const before = await usage()
    const first = { userId: 'device-a', sessionId: 's-a', userAttributes: { email: 'p@x.test' }, authFields: ['email'] }
    const second = { ...first, userId: 'device-b', sessionId: 's-b' }
    for (let i = 0; i < 2; i++) await sent('/user/auth', first)
    expect(await usage()).toBe(before + 1)
    // Another device signing in is a change (it becomes an alias); its resend is not.
    for (let i = 0; i < 2; i++) await sent('/user/auth', second)
    expect(await usage()).toBe(before + 2)
  })

  test('/groupidentify: a resend counts once; new properties or a new member count', async () => {
    const before = await usage()
    const group = { endUserId: 'g-user', sessionId: 'g-s', groupType: 'company', groupKey: 42, groupProperties: { name: 'Acme' } }
    for (let i = 0; i < 3; i++) await sent('/groupidentify', group)
    expect(await usage()).toBe(before + 1)
    await sent('/groupidentify', { ...group, groupProperties: { seats: 5 } })
    expect(await usage()).toBe(before + 2)
    await sent('/groupidentify', { ...group, endUserId: 'g-other' })
    expect(await usage()).toBe(before + 3)
    expect(await core.database.db.rows(sql`select end_user_id from group_members where group_key = '42' order by 1`)).toEqual([
      { end_user_id: 'g-other' },
      { end_user_id: 'g-user' },
    ])
  })

  test('an identify and its resend in one commit count once', async () => {
    const racing = await startCore({ writer: { lingerMs: 20 } })
    try {
      const identify = { userId: 'u-twice', userAttributes: { plan: 'free' } }
      const group = { endUserId: 'u-twice', groupType: 'team', groupKey: 't', groupProperties: { a: 1 } }
      const statuses = await Promise.all([
        ...[0, 1].map(() => racing.post('/api/ingestion/user', identify).then((r) => r.status)),
        ...[0, 1].map(() => racing.post('/api/ingestion/groupidentify', group).then((r) => r.status)),
      ])
      expect(statuses).toEqual([200, 200, 200, 200])
      expect(await racing.database.db.rows(sql`select sum(events)::int as events from usage_counters`)).toEqual([{ events: 2 }])
    } finally {
      await racing.close()
    }
  })
})
