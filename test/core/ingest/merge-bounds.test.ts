import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { END_USER_ATTRIBUTES, GROUP_PROPERTIES, SESSION_PROPERTIES } from '@sightline/core/ingest/sessions/bounded-merge'
import { groupingCores, type TestCore } from '../../helpers/core'

// Merged objects (end-user attributes, group properties, session automatic properties) stay within
// their bounds however many requests grow them: new names past the bound are dropped, values of the
// names stored still update.

const cores = groupingCores()

/** `count` names `prefix-0`... each with `value`. */
const named = (prefix: string, count: number, value: unknown = 1) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}-${i}`, value]))
const ok = async (res: Promise<Response>) => expect((await res).status).toBe(200)
/** Through `via` (its writer), into `core`'s project. */
const identify = (via: TestCore, userId: string, userAttributes: Record<string, unknown>) =>
  ok(via.post('/api/ingestion/user', { userId, userAttributes }, { key: cores.core.key }))
const attributesOf = async (endUserId: string) =>
  (await cores.database.db.rows<{ attributes: Record<string, unknown> }>(sql`select attributes from end_users where end_user_id = ${endUserId}`))[0].attributes
const size = async (endUserId: string) =>
  (await cores.database.db.rows<{ bytes: number }>(sql`select pg_column_size(attributes || '{}'::jsonb)::int as bytes from end_users where end_user_id = ${endUserId}`))[0].bytes
const half = Math.ceil(END_USER_ATTRIBUTES.names / 2) + 10

describe('end-user attributes', () => {
  test('identifies adding names past the bound store no more of them; values of stored names still update', async () => {
    await identify(cores.core, 'b-names', { email: 'ann@b.test', ...named('a', half) })
    await identify(cores.core, 'b-names', { ...named('b', half), email: 'ann@new.test' })
    const stored = await attributesOf('b-names')
    expect(stored).toEqual({ email: 'ann@new.test', ...named('a', half) })
    // Those that fit still come in.
    await identify(cores.core, 'b-names', { plan: 'pro' })
    expect(await attributesOf('b-names')).toEqual({ ...stored, plan: 'pro' })
  })

  test('identifies growing the attributes past the byte bound store no more of them; smaller values still update', async () => {
    const big = 'x'.repeat(Math.floor(END_USER_ATTRIBUTES.bytes * 0.6))
    await identify(cores.core, 'b-bytes', { email: 'ben@b.test', big })
    await identify(cores.core, 'b-bytes', { bigger: big, email: 'ben@new.test' })
    expect(await attributesOf('b-bytes')).toEqual({ email: 'ben@new.test', big })
    const other = 'y'.repeat(Math.floor(END_USER_ATTRIBUTES.bytes * 0.3))
    await identify(cores.core, 'b-bytes', { other })
    // Stored values growing past the bound are not taken either; one that shrinks is.
    await identify(cores.core, 'b-bytes', { big: 'z'.repeat(Math.floor(END_USER_ATTRIBUTES.bytes * 0.8)), email: 'ben@third.test' })
    expect(await attributesOf('b-bytes')).toEqual({ email: 'ben@new.test', big, other })
    await identify(cores.core, 'b-bytes', { big: 'small' })
    expect(await attributesOf('b-bytes')).toEqual({ email: 'ben@new.test', big: 'small', other })
    expect(await size('b-bytes')).toBeLessThanOrEqual(END_USER_ATTRIBUTES.bytes)
  })

  test('one identify over the bound keeps its first names, in the order sent', async () => {
    const sent = named('c', END_USER_ATTRIBUTES.names + 50)
    await identify(cores.core, 'b-one', sent)
    expect(await attributesOf('b-one')).toEqual(named('c', END_USER_ATTRIBUTES.names))
  })

  test('identifies of one commit, a new end user and a stored one, stay within the bound together', async () => {
    await identify(cores.core, 'b-commit-old', { email: 'cy@b.test' })
    await Promise.all([
      identify(cores.grouping, 'b-commit-new', named('d', half)),
      identify(cores.grouping, 'b-commit-new', named('e', half)),
      identify(cores.grouping, 'b-commit-old', named('f', half)),
      identify(cores.grouping, 'b-commit-old', { ...named('g', half), email: 'cy@new.test' }),
    ])
    const [{ commits }] = await cores.database.db.rows<{ commits: number }>(
      sql`select count(distinct xmin::text)::int as commits from end_users where end_user_id in ('b-commit-new', 'b-commit-old')`,
    )
    expect(commits).toBe(1)
    // The new end user takes the first names that fit.
    const made = await attributesOf('b-commit-new')
    expect(Object.keys(made)).toHaveLength(END_USER_ATTRIBUTES.names)
    const old = await attributesOf('b-commit-old')
    expect(Object.keys(old).length).toBeLessThanOrEqual(END_USER_ATTRIBUTES.names)
    expect(old.email).toBe('cy@new.test')
  })
})

describe('group properties', () => {
  const groupIdentify = (groupProperties: Record<string, unknown>) =>
    ok(cores.core.post('/api/ingestion/groupidentify', { groupType: 'company', groupKey: 'bounded', groupProperties }))
  const properties = async () =>
    (await cores.database.db.rows<{ properties: Record<string, unknown> }>(sql`select properties from groups where group_key = 'bounded'`))[0].properties

  test('group identifies adding names past the bound store no more of them; values of stored names still update', async () => {
    const half = Math.ceil(GROUP_PROPERTIES.names / 2) + 10
    await groupIdentify({ name: 'Acme', ...named('a', half) })
    await groupIdentify({ ...named('b', half), name: 'Acme Inc' })
    expect(await properties()).toEqual({ name: 'Acme Inc', ...named('a', half) })
  })
})

describe('session automatic properties', () => {
  const chunk = (automaticProperties: Record<string, unknown>, at: number) =>
    ok(cores.core.post('/api/ingestion/events', { sessionId: 'b-session', events: [{ type: 3, timestamp: at, data: {} }], automaticProperties }))
  const properties = async () =>
    (await cores.database.db.rows<{ automatic_properties: Record<string, unknown> }>(sql`select automatic_properties from sessions where session_id = 'b-session'`))[0]
      .automatic_properties

  test('chunks adding names past the bound store no more of them; values of stored names still update', async () => {
    const half = Math.ceil(SESSION_PROPERTIES.names / 2) + 5
    const t0 = Date.now() - 60_000
    await chunk({ language: 'en', ...named('a', half) }, t0)
    await chunk({ ...named('b', half), language: 'fr' }, t0 + 5_000)
    expect(await properties()).toEqual({ language: 'fr', ...named('a', half) })
    // Nothing new: the same properties again, written with the chunk's activity.
    await chunk({ language: 'fr' }, t0 + 10_000)
    expect(await properties()).toEqual({ language: 'fr', ...named('a', half) })
  })
})
