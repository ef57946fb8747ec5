import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { END_USER_ATTRIBUTES, GROUP_PROPERTIES } from '@sightline/core/ingest/sessions/bounded-merge'
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

  // Past the bound new names are dropped (merge-bounds.test.ts): an identify bringing only those stores
  // nothing, and neither it nor its resends count; an update of a stored value still does.
  const named = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`n-${i}`, 1]))

  test('/user: at the bound, an identify with a new name and its resends count nothing; an update counts', async () => {
    await sent('/user', { userId: 'u-full', userAttributes: named(END_USER_ATTRIBUTES.names) })
    const before = await usage()
    for (let i = 0; i < 3; i++) await sent('/user', { userId: 'u-full', userAttributes: { 'n-0': 1, plan: 'pro' } })
    expect(await usage()).toBe(before)
    await sent('/user', { userId: 'u-full', userAttributes: { 'n-0': 2, plan: 'pro' } })
    expect(await usage()).toBe(before + 1)
    const [{ attributes }] = await core.database.db.rows<{ attributes: Record<string, unknown> }>(
      sql`select attributes from end_users where end_user_id = 'u-full'`,
    )
    expect(attributes).toEqual({ ...named(END_USER_ATTRIBUTES.names), 'n-0': 2 })
  })

  test('/groupidentify: at the bound, a new property and its resends count nothing; an update counts', async () => {
    const group = { groupType: 'company', groupKey: 'full' }
    await sent('/groupidentify', { ...group, groupProperties: named(GROUP_PROPERTIES.names) })
    const before = await usage()
    for (let i = 0; i < 3; i++) await sent('/groupidentify', { ...group, groupProperties: { 'n-0': 1, seats: 5 } })
    expect(await usage()).toBe(before)
    await sent('/groupidentify', { ...group, groupProperties: { 'n-0': 2, seats: 5 } })
    expect(await usage()).toBe(before + 1)
    const [{ properties }] = await core.database.db.rows<{ properties: Record<string, unknown> }>(
      sql`select properties from groups where group_key = 'full'`,
    )
    expect(properties).toEqual({ ...named(GROUP_PROPERTIES.names), 'n-0': 2 })
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
