import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresDatabase } from '@sightline/core/db'
import { authValues } from '@sightline/core/ingest/identity/service'
import { startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

const attributesOf = async (core: TestCore, endUserId: string) =>
  (await core.database.db.rows<{ attributes: unknown }>(sql`select attributes from end_users where end_user_id = ${endUserId}`))[0]?.attributes
const aliases = (core: TestCore) =>
  core.database.db.rows<{ alias_id: string; end_user_id: string }>(sql`select alias_id, end_user_id from end_user_aliases order by alias_id`)

describe('auth values', () => {
  test('every named field must have a value', () => {
    expect(authValues({ email: 'a@x', id: 7, name: 'A' }, ['id', 'email', 'email'])).toEqual({ email: 'a@x', id: 7 })
    expect(authValues({ email: 'a@x' }, ['email', 'id'])).toBeNull()
    expect(authValues({ email: '' }, ['email'])).toBeNull()
    expect(authValues({ email: 'a@x' }, [])).toBeNull()
  })

  test('only the attributes\' own members are values, kept as own members', () => {
    for (const field of ['constructor', 'toString', 'hasOwnProperty', '__proto__']) expect(authValues({ email: 'a@x' }, [field])).toBeNull()
    expect(authValues({ email: 'a@x' }, ['email', 'constructor'])).toBeNull()
    const sent = JSON.parse('{"__proto__":"x","email":"a@x"}')
    expect(JSON.stringify(authValues(sent, ['__proto__', 'email']))).toBe('{"__proto__":"x","email":"a@x"}')
  })
})

describe('POST /api/ingestion/user', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  test('the fielded shape upserts the end user, merges attributes and links the session', async () => {
    const first = await core.post('/api/ingestion/user', {
      userId: 'id-1',
      userAttributes: { email: 'ann@shop.test', name: 'Ann', image: 'https://img.test/a.png', provider: 'google' },
      sessionId: 'id-session',
      posthogName: 'Ann',
    })
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ success: true, endUserId: 'id-1' })
    await core.post('/api/ingestion/user', { userId: 'id-1', userAttributes: { name: 'Ann B.', plan: { tier: 'pro' } }, sessionId: 'id-session' })
    expect(await attributesOf(core, 'id-1')).toEqual({ email: 'ann@shop.test', name: 'Ann B.', image: 'https://img.test/a.png', provider: 'google', plan: { tier: 'pro' } })
    const [session] = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from sessions where session_id = 'id-session'`)
    expect(session.end_user_id).toBe('id-1')
  })

  test('without a userId the server makes one and answers it', async () => {
    const res = await core.post('/api/ingestion/user', { userId: null, userAttributes: { name: 'Anon' }, sessionId: 'id-s2' })
    const { endUserId } = await res.json()
    expect(endUserId).toMatch(/^[0-9a-f-]{36}$/)
    expect(await attributesOf(core, endUserId)).toEqual({ name: 'Anon' })
  })

  test.each([
    [{ userId: 'has space', userAttributes: {} }, '/userId'],
    [{ userId: 'u', userAttributes: 'x' }, '/userAttributes'],
    [{ userId: 'u', userAttributes: {}, sessionId: '' }, '/sessionId'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/user', body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' }, path })
  })
})

describe('POST /api/ingestion/user/auth', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const auth = (userId: string, userAttributes: Record<string, unknown>, authFields = ['email']) =>
    core.post('/api/ingestion/user/auth', { userId, userAttributes, sessionId: `s-${userId}`, authFields }).then((r) => r.json())

  test('a second device with the same auth values becomes an alias of the first person; attributes merge there', async () => {
    expect(await auth('laptop', { email: 'bo@shop.test', name: 'Bo' })).toEqual({ success: true, endUserId: 'laptop' })
    expect(await auth('phone', { email: 'bo@shop.test', plan: 'pro' })).toEqual({ success: true, endUserId: 'laptop' })
    expect(await aliases(core)).toEqual([{ alias_id: 'phone', end_user_id: 'laptop' }])
    expect(await attributesOf(core, 'laptop')).toEqual({ email: 'bo@shop.test', name: 'Bo', plan: 'pro' })
    // Plain identify of an alias lands on its person too.
    expect(await (await core.post('/api/ingestion/user', { userId: 'phone', userAttributes: { age: 40 }, sessionId: 's-phone' })).json()).toEqual({
      success: true,
      endUserId: 'laptop',
    })
    expect(await attributesOf(core, 'laptop')).toMatchObject({ age: 40 })
    // Repeating the call changes nothing.
    expect(await auth('phone', { email: 'bo@shop.test' })).toEqual({ success: true, endUserId: 'laptop' })
    expect(await aliases(core)).toHaveLength(1)
  })

  test('different values or missing auth fields do not alias', async () => {
    expect((await auth('tablet', { email: 'cy@shop.test' })).endUserId).toBe('tablet')
    expect((await auth('desk', { name: 'no email' })).endUserId).toBe('desk')
    expect((await auth('tv', { email: 'bo@shop.test' }, ['email', 'id'])).endUserId).toBe('tv')
    expect((await aliases(core)).map((a) => a.alias_id)).toEqual(['phone'])
  })

  test('when a person turns out to be another, its aliases move along and never chain', async () => {
    await auth('d-old', { accountId: 7 }, ['accountId'])
    expect((await auth('laptop', { email: 'bo@shop.test', accountId: 7 }, ['accountId'])).endUserId).toBe('d-old')
    expect(await aliases(core)).toEqual([
      { alias_id: 'laptop', end_user_id: 'd-old' },
      { alias_id: 'phone', end_user_id: 'd-old' },
    ])
  })

  test('auth fields the attributes do not have, named like members every object inherits, do not alias', async () => {
    const before = await aliases(core)
    for (const field of ['constructor', 'toString', '__proto__']) {
      expect((await auth(`mallory-${field.length}`, { name: 'Mallory' }, [field])).endUserId).toBe(`mallory-${field.length}`)
    }
    expect(await aliases(core)).toEqual(before)
    // `__proto__` sent as an attribute is an attribute like any other: it matches only the same value.
    const own = (userId: string, value: string) =>
      core
        .request('/api/ingestion/user/auth', {
          method: 'POST',
          headers: { authorization: `Bearer ${core.key}` },
          body: `{"userId":"${userId}","userAttributes":{"__proto__":"${value}"},"authFields":["__proto__"]}`,
        })
        .then((r) => r.json())
    expect((await own('own-proto-1', 'x')).endUserId).toBe('own-proto-1')
    expect((await own('own-proto-2', 'y')).endUserId).toBe('own-proto-2')
    expect((await own('own-proto-3', 'x')).endUserId).toBe('own-proto-1')
    expect(await aliases(core)).toEqual(expect.arrayContaining([...before, { alias_id: 'own-proto-3', end_user_id: 'own-proto-1' }]))
    expect(await aliases(core)).toHaveLength(before.length + 1)
  })

  test('validation: authFields must be a list of names', async () => {
    const res = await core.post('/api/ingestion/user/auth', { userId: 'x', userAttributes: {}, authFields: 'email' })
    expect(res.status).toBe(400)
    expect((await res.json()).path).toBe('/authFields')
  })
})

describe('auth-aware identify under concurrency', () => {
  test('devices signing in at once end as one person', async () => {
    const core = await startCore({ writer: { lingerMs: 2 } })
    try {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          core
            .post('/api/ingestion/user/auth', { userId: `dev-${i}`, userAttributes: { email: 'same@shop.test', [`k${i}`]: i }, sessionId: `cs-${i}`, authFields: ['email'] })
            .then((r) => r.json()),
        ),
      )
      const canonical = new Set(answers.map((a) => a.endUserId))
      expect(canonical.size).toBe(1)
      const person = [...canonical][0]
      const links = await aliases(core)
      expect(links).toHaveLength(29)
      expect(links.every((l) => l.end_user_id === person)).toBe(true)
      expect(Object.keys((await attributesOf(core, person)) as object)).toHaveLength(31)
    } finally {
      await core.close()
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database agree on the person', async () => {
    const first = await startCore({ writer: { lingerMs: 1 } })
    const secondDb = postgresDatabase(first.database.url!)
    const second = await startCore({ database: { db: secondDb, close: () => secondDb.close() } })
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? first : second)
            .post('/api/ingestion/user/auth', { userId: `two-${i}`, userAttributes: { email: 'shared@shop.test' }, authFields: ['email'] }, { key: first.key })
            .then((r) => r.json()),
        ),
      )
      expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
      expect(await aliases(first)).toHaveLength(39)
    } finally {
      await second.close()
      await secondDb.close()
      await first.close()
    }
  })
})
