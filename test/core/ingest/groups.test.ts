import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase } from '../../helpers/database'
import { countedTransactions } from '../../helpers/counted-transactions'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const groups = () => core.database.db.rows<{ group_type: string; group_key: string; properties: unknown }>(sql`select group_type, group_key, properties from groups order by group_type, group_key`)
const members = () => core.database.db.rows<{ group_key: string; end_user_id: string }>(sql`select group_key, end_user_id from group_members order by group_key, end_user_id`)

describe('POST /api/ingestion/groupidentify', () => {
  test('upserts the group, merges its properties and links the end user', async () => {
    const first = await core.post('/api/ingestion/groupidentify', {
      sessionId: 'g-s1',
      endUserId: 'g-u1',
      groupType: 'company',
      groupKey: 'acme',
      groupProperties: { name: 'Acme', plan: 'free' },
    })
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ success: true })
    await core.post('/api/ingestion/groupidentify', { endUserId: 'g-u2', groupType: 'company', groupKey: 'acme', groupProperties: { plan: 'pro', seats: 12 } })
    await core.post('/api/ingestion/groupidentify', { endUserId: 'g-u1', groupType: 'company', groupKey: 'acme' })
    expect(await groups()).toEqual([{ group_type: 'company', group_key: 'acme', properties: { name: 'Acme', plan: 'pro', seats: 12 } }])
    expect(await members()).toEqual([
      { group_key: 'acme', end_user_id: 'g-u1' },
      { group_key: 'acme', end_user_id: 'g-u2' },
    ])
    const [session] = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from sessions where session_id = 'g-s1'`)
    expect(session.end_user_id).toBe('g-u1')
  })

  test('without an end user only the group is stored; a numeric key is taken as text', async () => {
    await core.post('/api/ingestion/groupidentify', { groupType: 'team', groupKey: 42, groupProperties: null })
    expect(await groups()).toContainEqual({ group_type: 'team', group_key: '42', properties: {} })
    expect((await members()).filter((m) => m.group_key === '42')).toHaveLength(0)
  })

  test('with a session but no end user, the end user of the session is linked; a session without one links no one', async () => {
    await core.post('/api/ingestion/customEvent', { sessionId: 'g-by-session', endUserId: 'g-session-user', eventName: 'signed_in' })
    expect((await core.post('/api/ingestion/groupidentify', { sessionId: 'g-by-session', groupType: 'company', groupKey: 'by-session' })).status).toBe(200)
    expect((await core.post('/api/ingestion/groupidentify', { sessionId: 'g-anonymous', groupType: 'company', groupKey: 'by-anonymous' })).status).toBe(200)
    // Both forms in one commit, for the same person, are one link.
    await Promise.all([
      core.post('/api/ingestion/groupidentify', { sessionId: 'g-by-session', groupType: 'company', groupKey: 'both' }),
      core.post('/api/ingestion/groupidentify', { endUserId: 'g-session-user', groupType: 'company', groupKey: 'both' }),
    ])
    const linked = (await members()).filter((m) => ['by-session', 'by-anonymous', 'both'].includes(m.group_key))
    expect(linked).toEqual([
      { group_key: 'both', end_user_id: 'g-session-user' },
      { group_key: 'by-session', end_user_id: 'g-session-user' },
    ])
    expect(await groups()).toContainEqual({ group_type: 'company', group_key: 'by-anonymous', properties: {} })
  })

  test('concurrent identifies of one group in one commit merge, each link once', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        core.post('/api/ingestion/groupidentify', { endUserId: `m${i % 8}`, groupType: 'org', groupKey: 'busy', groupProperties: { [`p${i}`]: i } }).then((r) => r.status),
      ),
    )
    expect(statuses.every((s) => s === 200)).toBe(true)
    const [group] = (await groups()).filter((g) => g.group_key === 'busy')
    expect(Object.keys(group.properties as object)).toHaveLength(40)
    expect((await members()).filter((m) => m.group_key === 'busy')).toHaveLength(8)
  })

  test('two groups whose type and key differ only in where a line break falls stay two in one commit, each with its member', async () => {
    const statuses = await Promise.all([
      core.post('/api/ingestion/groupidentify', { endUserId: 'nl-1', groupType: 'line\nbreak', groupKey: 'one', groupProperties: { first: 1 } }),
      core.post('/api/ingestion/groupidentify', { endUserId: 'nl-2', groupType: 'line', groupKey: 'break\none', groupProperties: { second: 2 } }),
    ].map((r) => r.then((res) => res.status)))
    expect(statuses).toEqual([200, 200])
    const split = (await groups()).filter((g) => g.group_type.startsWith('line'))
    expect(split).toEqual([
      { group_type: 'line', group_key: 'break\none', properties: { second: 2 } },
      { group_type: 'line\nbreak', group_key: 'one', properties: { first: 1 } },
    ])
    const linked = await core.database.db.rows<{ group_type: string; end_user_id: string }>(sql`select group_type, end_user_id from group_members where group_type like 'line%' order by end_user_id`)
    expect(linked).toEqual([
      { group_type: 'line\nbreak', end_user_id: 'nl-1' },
      { group_type: 'line', end_user_id: 'nl-2' },
    ])
  })

  test('NUL characters are dropped from the type and key, which keep the rest', async () => {
    const res = await core.post('/api/ingestion/groupidentify', { groupType: 'te\u0000am', groupKey: '\u0000nul-key' })
    expect(res.status).toBe(200)
    expect(await groups()).toContainEqual({ group_type: 'team', group_key: 'nul-key', properties: {} })
  })

  test.each([
    [{ groupKey: 'k' }, '/groupType'],
    [{ groupType: 'company' }, '/groupKey'],
    [{ groupType: '', groupKey: 'k' }, '/groupType'],
    [{ groupType: '\u0000\u0000', groupKey: 'k' }, '/groupType'],
    [{ groupType: 'company', groupKey: '\u0000' }, '/groupKey'],
    [{ groupType: 'company', groupKey: '' }, '/groupKey'],
    [{ groupType: 'company', groupKey: 'k', groupProperties: [1] }, '/groupProperties'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/groupidentify', body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' }, path })
    expect((await groups()).filter((g) => g.group_type === '' || g.group_key === '')).toEqual([])
  })
})

describe('group types and keys with lone surrogates (text a browser cut inside an emoji)', () => {
  test('keys stored as one group (a lone surrogate is kept as U+FFFD) are one group in the commit too: no failed commit to split', async () => {
    const database = await createTestDatabase()
    const { database: countedDatabase, transactions } = countedTransactions(database)
    const counted = await startCore({ database: countedDatabase, writer: { lingerMs: 50 } })
    try {
      const before = transactions()
      const statuses = await Promise.all(
        [
          { endUserId: 'ls-1', groupType: 'team', groupKey: 'cut\ud83d', groupProperties: { first: 1 } },
          { endUserId: 'ls-2', groupType: 'team', groupKey: 'cut\ud83e', groupProperties: { second: 2 } },
          { endUserId: 'ls-3', groupType: 'team\udc00', groupKey: 'cut\ufffd', groupProperties: { third: 3 } },
          { endUserId: 'ls-4', groupType: 'team\ufffd', groupKey: 'cut\ufffd', groupProperties: { fourth: 4 } },
        ].map((body) => counted.post('/api/ingestion/groupidentify', body).then((r) => r.status)),
      )
      expect(statuses).toEqual([200, 200, 200, 200])
      // One commit for the four; a commit upserting one group twice fails whole and is split.
      expect(transactions() - before).toBe(1)
      expect(await counted.database.db.rows(sql`select group_type, group_key, properties from groups order by group_type`)).toEqual([
        { group_type: 'team', group_key: 'cut\ufffd', properties: { first: 1, second: 2 } },
        { group_type: 'team\ufffd', group_key: 'cut\ufffd', properties: { third: 3, fourth: 4 } },
      ])
      expect(await counted.database.db.rows(sql`select group_type, end_user_id from group_members order by end_user_id`)).toEqual([
        { group_type: 'team', end_user_id: 'ls-1' },
        { group_type: 'team', end_user_id: 'ls-2' },
        { group_type: 'team\ufffd', end_user_id: 'ls-3' },
        { group_type: 'team\ufffd', end_user_id: 'ls-4' },
      ])
    } finally {
      await counted.close()
      await database.close()
    }
  })
})
