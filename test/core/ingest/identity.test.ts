import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { authValues } from '@sightline/core/ingest/identity/service'
import { identitySink, personLookup } from '@sightline/core/ingest/identity/store'
import { startCore, startCoreBeside, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'
import { identifyRow } from '../../helpers/identity'

const attributesOf = async (core: TestCore, endUserId: string) =>
  (await core.database.db.rows<{ attributes: unknown }>(sql`select attributes from end_users where end_user_id = ${endUserId}`))[0]?.attributes
const sessionEndUser = async (core: TestCore, sessionId: string) =>
  (await core.database.db.rows<{ end_user_id: string | null }>(sql`select end_user_id from sessions where session_id = ${sessionId}`))[0]?.end_user_id
const aliases = (core: TestCore) =>
  core.database.db.rows<{ alias_id: string; end_user_id: string }>(sql`select alias_id, end_user_id from end_user_aliases order by alias_id`)

describe('auth values', () => {
  test('every named field must have a value', () => {
    expect(authValues({ email: 'a@x', id: 7, name: 'A' }, ['id', 'email', 'email'])).toEqual({ email: 'a@x', id: 7 })
    expect(authValues({ email: 'a@x' }, ['email', 'id'])).toBeNull()
    expect(authValues({ email: '' }, ['email'])).toBeNull()
    expect(authValues({ email: [] }, ['email'])).toBeNull()
    expect(authValues({ email: {} }, ['email'])).toBeNull()
    expect(authValues({ email: [''] }, ['email'])).toEqual({ email: [''] })
    expect(authValues({ id: 0, admin: false }, ['id', 'admin'])).toEqual({ id: 0, admin: false })
    expect(authValues({ email: 'a@x' }, [])).toBeNull()
  })

  test('a text of only NUL characters is no value: it is stored empty (see stripNul)', () => {
    expect(authValues({ email: '\u0000\u0000' }, ['email'])).toBeNull()
    expect(authValues({ email: 'a\u0000@x' }, ['email'])).toEqual({ email: 'a@x' })
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

  let anonymous: string
  test('without a userId the server makes one and answers it', async () => {
    const res = await core.post('/api/ingestion/user', { userId: null, userAttributes: { name: 'Anon' }, sessionId: 'id-s2' })
    const { endUserId } = await res.json()
    expect(endUserId).toMatch(/^[0-9a-f-]{36}$/)
    expect(await attributesOf(core, endUserId)).toEqual({ name: 'Anon' })
    expect(await sessionEndUser(core, 'id-s2')).toBe(endUserId)
    anonymous = endUserId
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

  test('without a userId, a session that has an end user answers it: a retried identify makes no other', async () => {
    const first = await (await core.post('/api/ingestion/user', { userId: null, userAttributes: { email: 'n9@shop.test' }, sessionId: 'id-s3' })).json()
    const again = await (await core.post('/api/ingestion/user', { userAttributes: { plan: 'pro' }, sessionId: 'id-s3' })).json()
    expect(again.endUserId).toBe(first.endUserId)
    expect(await attributesOf(core, first.endUserId)).toEqual({ email: 'n9@shop.test', plan: 'pro' })
    // A session another route opened with its end user, and one opened without any.
    await core.post('/api/ingestion/customEvent', { sessionId: 'id-s4', endUserId: 'ce-user', eventName: 'first' })
    expect((await (await core.post('/api/ingestion/user', { userId: null, userAttributes: { a: 1 }, sessionId: 'id-s4' })).json()).endUserId).toBe('ce-user')
    await core.post('/api/ingestion/customEvent', { sessionId: 'id-s5', eventName: 'first' })
    const made = (await (await core.post('/api/ingestion/user', { userId: null, userAttributes: {}, sessionId: 'id-s5' })).json()).endUserId
    expect(made).toMatch(/^[0-9a-f-]{36}$/)
    expect(await sessionEndUser(core, 'id-s5')).toBe(made)
    const users = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from end_users`)
    expect(users.map((u) => u.end_user_id).sort()).toEqual(['ce-user', 'id-1', first.endUserId, made, anonymous].sort())
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

  test('a person that turns out to be another brings its attributes along: its auth values go on finding the person', async () => {
    expect((await auth('m-laptop', { phone: '555-0404', name: 'Robert' }, ['phone'])).endUserId).toBe('m-laptop')
    expect((await auth('m-phone', { email: 'bob@merge.test', name: 'Bob' }, ['email'])).endUserId).toBe('m-phone')
    expect((await auth('m-laptop', { email: 'bob@merge.test' })).endUserId).toBe('m-phone')
    // What the person has already stays: the other's attributes fill in what it has not.
    expect(await attributesOf(core, 'm-phone')).toEqual({ email: 'bob@merge.test', phone: '555-0404', name: 'Bob' })
    // The laptop's phone number is the person's: a tablet signing in with it is Bob.
    expect((await auth('m-tablet', { phone: '555-0404' }, ['phone'])).endUserId).toBe('m-phone')
  })

  test('a person with other auth values that signs in as someone else brings none of its attributes along: it was someone else', async () => {
    expect((await auth('k-phone', { email: 'dee@kiosk.test', name: 'Dee' })).endUserId).toBe('k-phone')
    expect((await auth('k-kiosk', { email: 'cy@kiosk.test', plan: 'free' })).endUserId).toBe('k-kiosk')
    expect((await auth('k-kiosk', { email: 'dee@kiosk.test' })).endUserId).toBe('k-phone')
    expect(await attributesOf(core, 'k-phone')).toEqual({ email: 'dee@kiosk.test', name: 'Dee' })
  })

  test('an alias signing in as another person becomes that person\'s alone: the person it was an alias of stays apart', async () => {
    // A shared tablet: Ann signed in on it, then Ben does. WIRE.md: "this userId becomes an alias".
    expect((await auth('fam-laptop', { email: 'ann@fam.test', name: 'Ann' })).endUserId).toBe('fam-laptop')
    expect((await auth('fam-tablet', { email: 'ann@fam.test' })).endUserId).toBe('fam-laptop')
    expect((await auth('fam-phone', { email: 'ben@fam.test', name: 'Ben' })).endUserId).toBe('fam-phone')
    expect((await auth('fam-tablet', { email: 'ben@fam.test' })).endUserId).toBe('fam-phone')
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('fam-'))).toEqual([{ alias_id: 'fam-tablet', end_user_id: 'fam-phone' }])
    // Ann on her laptop is still Ann, and Ben keeps his email.
    expect((await auth('fam-laptop', { email: 'ann@fam.test' })).endUserId).toBe('fam-laptop')
    expect(await attributesOf(core, 'fam-phone')).toEqual({ email: 'ben@fam.test', name: 'Ben' })
    expect(await attributesOf(core, 'fam-laptop')).toEqual({ email: 'ann@fam.test', name: 'Ann' })
  })

  test('an alias signing in with values no one has yet, where its person has others, becomes a person of its own', async () => {
    // The shared tablet again, but Ben was never seen before: he is not Ann, whose email stays hers.
    expect((await auth('new-laptop', { email: 'ann@new.test', name: 'Ann' })).endUserId).toBe('new-laptop')
    expect((await auth('new-tablet', { email: 'ann@new.test' })).endUserId).toBe('new-laptop')
    expect((await auth('new-tablet', { email: 'ben@new.test', name: 'Ben' })).endUserId).toBe('new-tablet')
    expect(await attributesOf(core, 'new-laptop')).toEqual({ email: 'ann@new.test', name: 'Ann' })
    expect(await attributesOf(core, 'new-tablet')).toEqual({ email: 'ben@new.test', name: 'Ben' })
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('new-'))).toEqual([])
    // Ben's phone is Ben, Ann's laptop Ann.
    expect((await auth('new-phone', { email: 'ben@new.test' })).endUserId).toBe('new-tablet')
    expect((await auth('new-laptop', { email: 'ann@new.test' })).endUserId).toBe('new-laptop')
    // A value the person does not have yet is added to it: the device stays its alias.
    expect((await auth('new-watch', { email: 'ann@new.test' })).endUserId).toBe('new-laptop')
    expect((await auth('new-watch', { email: 'ann@new.test', phone: '555-0303' }, ['phone'])).endUserId).toBe('new-laptop')
    expect(await attributesOf(core, 'new-laptop')).toEqual({ email: 'ann@new.test', name: 'Ann', phone: '555-0303' })
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('new-'))).toEqual([
      { alias_id: 'new-phone', end_user_id: 'new-tablet' },
      { alias_id: 'new-watch', end_user_id: 'new-laptop' },
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

  test('the same values are equal JSON values: a list or object holding more, or a number for its text, is another person', async () => {
    const before = await aliases(core)
    expect((await auth('arr-1', { ids: ['a', 'b'] }, ['ids'])).endUserId).toBe('arr-1')
    expect((await auth('arr-2', { ids: ['a'] }, ['ids'])).endUserId).toBe('arr-2')
    expect((await auth('arr-3', { ids: ['b', 'a'] }, ['ids'])).endUserId).toBe('arr-3')
    expect((await auth('arr-4', { ids: ['a', 'b'] }, ['ids'])).endUserId).toBe('arr-1')
    expect((await auth('obj-1', { acct: { id: 1, region: 'eu' } }, ['acct'])).endUserId).toBe('obj-1')
    expect((await auth('obj-2', { acct: { id: 1 } }, ['acct'])).endUserId).toBe('obj-2')
    // Key order is no part of an object's value.
    expect((await auth('obj-3', { acct: { region: 'eu', id: 1 } }, ['acct'])).endUserId).toBe('obj-1')
    expect((await auth('num-1', { uid: 1 }, ['uid'])).endUserId).toBe('num-1')
    expect((await auth('num-2', { uid: '1' }, ['uid'])).endUserId).toBe('num-2')
    expect((await auth('num-3', { uid: 1.0 }, ['uid'])).endUserId).toBe('num-1')
    // A person found by several fields needs every one equal.
    expect((await auth('two-1', { org: ['x', 'y'], uid: 9 }, ['org', 'uid'])).endUserId).toBe('two-1')
    expect((await auth('two-2', { org: ['x'], uid: 9 }, ['org', 'uid'])).endUserId).toBe('two-2')
    expect((await aliases(core)).filter((a) => !before.some((b) => b.alias_id === a.alias_id))).toEqual([
      { alias_id: 'arr-4', end_user_id: 'arr-1' },
      { alias_id: 'num-3', end_user_id: 'num-1' },
      { alias_id: 'obj-3', end_user_id: 'obj-1' },
    ])
  })

  test('a value of only NUL characters identifies no one, not the people stored with an empty one', async () => {
    await core.post('/api/ingestion/user', { userId: 'empty-email', userAttributes: { email: '' } })
    expect((await auth('nul-1', { email: '\u0000' })).endUserId).toBe('nul-1')
    expect((await auth('nul-2', { email: '\u0000\u0000' })).endUserId).toBe('nul-2')
    expect((await aliases(core)).map((a) => a.alias_id)).not.toContain('nul-2')
  })

  test('an empty list or object identifies no one: signed-out visitors stay apart', async () => {
    expect((await auth('empty-list-1', { emails: [] }, ['emails'])).endUserId).toBe('empty-list-1')
    expect((await auth('empty-list-2', { emails: [] }, ['emails'])).endUserId).toBe('empty-list-2')
    expect((await auth('empty-obj-1', { account: {} }, ['account'])).endUserId).toBe('empty-obj-1')
    expect((await auth('empty-obj-2', { account: {} }, ['account'])).endUserId).toBe('empty-obj-2')
    expect((await aliases(core)).map((a) => a.alias_id)).not.toContain('empty-list-2')
    expect((await aliases(core)).map((a) => a.alias_id)).not.toContain('empty-obj-2')
  })

  test('without a userId, the end user of the session is the one identified', async () => {
    const first = await core.post('/api/ingestion/user/auth', { userId: null, userAttributes: { email: 'ses@shop.test' }, sessionId: 'auth-s', authFields: ['email'] })
    const { endUserId } = await first.json()
    expect(endUserId).toMatch(/^[0-9a-f-]{36}$/)
    // The session's end user, then an alias of another person: the person is the answer.
    await auth('ses-other', { email: 'ses-other@shop.test' })
    const again = await core.post('/api/ingestion/user/auth', { userAttributes: { email: 'ses-other@shop.test' }, sessionId: 'auth-s', authFields: ['email'] })
    expect((await again.json()).endUserId).toBe('ses-other')
    expect(await aliases(core)).toContainEqual({ alias_id: endUserId, end_user_id: 'ses-other' })
    const plain = await core.post('/api/ingestion/user', { userId: null, userAttributes: { seen: true }, sessionId: 'auth-s' })
    expect((await plain.json()).endUserId).toBe('ses-other')
    expect(await attributesOf(core, 'ses-other')).toMatchObject({ seen: true })
  })

  test.each([
    [{ userId: 'x', userAttributes: {}, authFields: 'email' }, '/authFields'],
    [{ userId: 'x', userAttributes: { '\u0000': 'v' }, authFields: ['email', '\u0000'] }, '/authFields/1'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/user/auth', body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' }, path })
  })

  test('a device that is a person signing in as someone else moves alone: its person stays one, with its other devices, under a new id', async () => {
    // Ann signs in on the shared desktop (a person: hers) and on her phone; then Ben, known, on the desktop.
    expect((await auth('sh-desk', { email: 'ann@share.test', name: 'Ann' })).endUserId).toBe('sh-desk')
    expect((await auth('sh-phone', { email: 'ann@share.test', plan: 'pro' })).endUserId).toBe('sh-desk')
    expect((await auth('sh-ben', { email: 'ben@share.test', name: 'Ben' })).endUserId).toBe('sh-ben')
    expect((await auth('sh-desk', { email: 'ben@share.test' })).endUserId).toBe('sh-ben')
    const links = (await aliases(core)).filter((a) => a.alias_id.startsWith('sh-'))
    const ann = links.find((a) => a.alias_id === 'sh-phone')!.end_user_id
    expect(ann).not.toBe('sh-desk')
    expect(ann).not.toBe('sh-ben')
    expect(links).toEqual([
      { alias_id: 'sh-desk', end_user_id: 'sh-ben' },
      { alias_id: 'sh-phone', end_user_id: ann },
    ])
    // Ann keeps everything that was hers, Ben gains nothing of it.
    expect(await attributesOf(core, ann)).toEqual({ email: 'ann@share.test', name: 'Ann', plan: 'pro' })
    expect(await attributesOf(core, 'sh-ben')).toEqual({ email: 'ben@share.test', name: 'Ben' })
    // Her phone is still Ann, a new device of hers finds her, and so does the desktop when she signs in there again.
    expect((await auth('sh-phone', { email: 'ann@share.test' })).endUserId).toBe(ann)
    expect((await core.post('/api/ingestion/user', { userId: 'sh-phone', userAttributes: { age: 30 }, sessionId: 's-sh-phone' }).then((r) => r.json())).endUserId).toBe(ann)
    expect((await auth('sh-laptop', { email: 'ann@share.test' })).endUserId).toBe(ann)
    expect((await auth('sh-desk', { email: 'ben@share.test' })).endUserId).toBe('sh-ben')
    expect((await auth('sh-desk', { email: 'ann@share.test' })).endUserId).toBe(ann)
    expect(await attributesOf(core, ann)).toEqual({ email: 'ann@share.test', name: 'Ann', plan: 'pro', age: 30 })
    expect(await attributesOf(core, 'sh-ben')).toEqual({ email: 'ben@share.test', name: 'Ben' })
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('sh-'))).toEqual([
      { alias_id: 'sh-desk', end_user_id: ann },
      { alias_id: 'sh-laptop', end_user_id: ann },
      { alias_id: 'sh-phone', end_user_id: ann },
    ])
  })

  test('a person seen on one device only, whose device signs in as someone else, stays findable by its auth values', async () => {
    expect((await auth('solo-kiosk', { email: 'cy@solo.test', name: 'Cy' })).endUserId).toBe('solo-kiosk')
    expect((await auth('solo-dee', { email: 'dee@solo.test' })).endUserId).toBe('solo-dee')
    expect((await auth('solo-kiosk', { email: 'dee@solo.test' })).endUserId).toBe('solo-dee')
    const cy = (await auth('solo-phone', { email: 'cy@solo.test' })).endUserId
    expect(cy).not.toBe('solo-phone')
    expect(cy).not.toBe('solo-kiosk')
    expect(await attributesOf(core, cy)).toEqual({ email: 'cy@solo.test', name: 'Cy' })
    expect(await attributesOf(core, 'solo-dee')).toEqual({ email: 'dee@solo.test' })
  })

  test('a device that leaves its person for values no one has starts from what it is told: nothing of whom it was before', async () => {
    // A shared desktop: Ann signs in on it, then Ben (known), then Carl (never seen).
    expect((await auth('cl-desk', { email: 'ann@carl.test', name: 'Ann' })).endUserId).toBe('cl-desk')
    expect((await auth('cl-ben', { email: 'ben@carl.test', name: 'Ben' })).endUserId).toBe('cl-ben')
    expect((await auth('cl-desk', { email: 'ben@carl.test' })).endUserId).toBe('cl-ben')
    expect((await auth('cl-desk', { email: 'carl@carl.test' })).endUserId).toBe('cl-desk')
    expect(await attributesOf(core, 'cl-desk')).toEqual({ email: 'carl@carl.test' })
    expect(await attributesOf(core, 'cl-ben')).toEqual({ email: 'ben@carl.test', name: 'Ben' })
    const ann = (await auth('cl-phone', { email: 'ann@carl.test' })).endUserId
    expect(ann).not.toBe('cl-desk')
    expect(await attributesOf(core, ann)).toEqual({ email: 'ann@carl.test', name: 'Ann' })
  })

  test('a person that came whole to another, whose device then leaves it for values no one has, brings nothing of that person along', async () => {
    // The laptop is Robert by his phone number, then turns out to be Bob (by email): it brings its
    // attributes to him. Carl then signs in on it.
    expect((await auth('wh-laptop', { phone: '555-0707', name: 'Robert' }, ['phone'])).endUserId).toBe('wh-laptop')
    expect((await auth('wh-phone', { email: 'bob@whole.test', name: 'Bob' })).endUserId).toBe('wh-phone')
    expect((await auth('wh-laptop', { email: 'bob@whole.test' })).endUserId).toBe('wh-phone')
    expect((await auth('wh-laptop', { email: 'carl@whole.test' })).endUserId).toBe('wh-laptop')
    expect(await attributesOf(core, 'wh-laptop')).toEqual({ email: 'carl@whole.test' })
    expect(await attributesOf(core, 'wh-phone')).toEqual({ email: 'bob@whole.test', phone: '555-0707', name: 'Bob' })
    expect((await auth('wh-tablet', { phone: '555-0707' }, ['phone'])).endUserId).toBe('wh-phone')
  })

  test('an end user that becomes an alias keeps no attributes of its own: they went to a person', async () => {
    expect((await auth('cr-desk', { email: 'ann@clear.test', name: 'Ann' })).endUserId).toBe('cr-desk')
    expect((await auth('cr-ben', { email: 'ben@clear.test' })).endUserId).toBe('cr-ben')
    expect((await auth('cr-desk', { email: 'ben@clear.test' })).endUserId).toBe('cr-ben')
    expect(await attributesOf(core, 'cr-desk')).toEqual({})
    expect((await auth('cr-laptop', { phone: '555-0808', name: 'Cy' }, ['phone'])).endUserId).toBe('cr-laptop')
    expect((await auth('cr-laptop', { email: 'ben@clear.test' })).endUserId).toBe('cr-ben')
    expect(await attributesOf(core, 'cr-laptop')).toEqual({})
    expect(await attributesOf(core, 'cr-ben')).toEqual({ email: 'ben@clear.test', phone: '555-0808', name: 'Cy' })
  })

  test('an alias whose row holds attributes from before (stored by an older core) leaves its person without them', async () => {
    await auth('old-ben', { email: 'ben@old.test' })
    await core.database.db.rows(sql`
      insert into end_users (project_id, end_user_id, attributes) values (${core.project.projectId}, 'old-desk', '{"email":"ann@old.test","name":"Ann"}'::jsonb)`)
    await core.database.db.rows(sql`insert into end_user_aliases (project_id, alias_id, end_user_id) values (${core.project.projectId}, 'old-desk', 'old-ben')`)
    expect((await auth('old-desk', { email: 'carl@old.test' })).endUserId).toBe('old-desk')
    expect(await attributesOf(core, 'old-desk')).toEqual({ email: 'carl@old.test' })
  })

  test('with many end users, the person is found through the index on attributes, not by reading them all', async () => {
    // The lookup runs inside the commit every waiting request shares, so it must not grow with the
    // project: 300,000 end users read one by one take about 100 ms.
    await core.database.db.rows(sql`
      insert into end_users (project_id, end_user_id, attributes)
      select ${core.project.projectId}, 'bulk-' || i, jsonb_build_object('email', 'bulk' || i || '@shop.test', 'plan', 'free')
      from generate_series(1, 5000) i`)
    await core.database.db.rows(sql`analyze end_users`)
    // In the spelling stored and in another (compared trimmed and in lowercase), both through the index.
    for (const email of ['bulk77@shop.test', ' Bulk77@SHOP.test']) {
      const plan = await core.database.db.rows(sql`explain (format json) ${personLookup(core.project.projectId, { email })}`)
      const indexes = [...JSON.stringify(plan).matchAll(/"Index Name":"(\w+)"/g)].map((m) => m[1])
      expect(indexes).toContain('end_users_auth_values_idx')
    }
    expect(await auth('bulk-device', { email: 'bulk77@shop.test' })).toEqual({ success: true, endUserId: 'bulk-77' })
    expect(await auth('bulk-phone', { email: 'BULK77@shop.test' })).toEqual({ success: true, endUserId: 'bulk-77' })
  })
})

describe('auth-aware identify under concurrency', () => {
  test('in one commit, an auth-aware identify finds people as the identifies before it in the commit left them', async () => {
    const core = await startCore()
    try {
      const row = (endUserId: string, attributes: Record<string, unknown>, authFields: string[]) => identifyRow(core, endUserId, attributes, authFields)
      // Stored first: a person with a phone number and no email.
      await core.post('/api/ingestion/user/auth', { userId: 'stored', userAttributes: { phone: '555-0101' }, authFields: ['phone'] })
      const rows = [
        // Found by the stored phone, and given an email by this commit...
        row('laptop', { phone: '555-0101', email: 'one@shop.test' }, ['phone']),
        row('new', { email: 'new@shop.test', phone: '555-0202' }, ['email']),
        // ...found by both: the stored phone and the email the commit gave.
        row('tablet', { email: 'one@shop.test', phone: '555-0101' }, ['email', 'phone']),
        // Found by a phone only this commit gave a person only this commit made.
        row('watch', { phone: '555-0202' }, ['phone']),
      ]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      expect(rows.map((r) => r.canonical)).toEqual(['stored', 'new', 'stored', 'new'])
      expect(await attributesOf(core, 'stored')).toEqual({ email: 'one@shop.test', phone: '555-0101' })
      expect(await attributesOf(core, 'new')).toEqual({ email: 'new@shop.test', phone: '555-0202' })
      expect(await aliases(core)).toEqual([
        { alias_id: 'laptop', end_user_id: 'stored' },
        { alias_id: 'tablet', end_user_id: 'stored' },
        { alias_id: 'watch', end_user_id: 'new' },
      ])
    } finally {
      await core.close()
    }
  })

  test('in one commit, plain and auth-aware identifies take effect in the order they came, as one commit after another', async () => {
    const core = await startCore()
    try {
      const row = (endUserId: string, attributes: Record<string, unknown>, authFields: string[] | null) => identifyRow(core, endUserId, attributes, authFields)
      const rows = [
        // A plain identify, then a later auth-aware one of the same end user: the later name stays.
        row('renamed', { name: 'Old' }, null),
        row('renamed', { name: 'New', email: 'renamed@shop.test' }, ['email']),
        // A plain identify gives an email; a second device signing in with it is that person.
        row('desktop', { email: 'plain@shop.test' }, null),
        row('mobile', { email: 'plain@shop.test' }, ['email']),
      ]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      expect(rows.map((r) => r.canonical)).toEqual(['renamed', 'renamed', 'desktop', 'desktop'])
      expect(await attributesOf(core, 'renamed')).toEqual({ name: 'New', email: 'renamed@shop.test' })
      expect(await attributesOf(core, 'mobile')).toBeUndefined()
      expect(await aliases(core)).toEqual([{ alias_id: 'mobile', end_user_id: 'desktop' }])
    } finally {
      await core.close()
    }
  })

  test('in one commit, an alias leaves its person for values no one has as the identifies before it left them', async () => {
    const core = await startCore()
    try {
      const row = (endUserId: string, attributes: Record<string, unknown>) => identifyRow(core, endUserId, attributes)
      await core.post('/api/ingestion/user/auth', { userId: 'c-laptop', userAttributes: { email: 'ann@commit.test' }, authFields: ['email'] })
      const rows = [
        // Ann signs in on the tablet, then Ben on it, then Ben on his phone; Ann's laptop changes her email.
        row('c-tablet', { email: 'ann@commit.test' }),
        row('c-tablet', { email: 'ben@commit.test' }),
        row('c-phone', { email: 'ben@commit.test' }),
        row('c-laptop', { email: 'ann@new.commit.test' }),
        // A device of Ann's signing in with her new email is hers.
        row('c-watch', { email: 'ann@commit.test' }),
        row('c-watch', { email: 'ann@new.commit.test' }),
      ]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      expect(rows.map((r) => r.canonical)).toEqual(['c-laptop', 'c-tablet', 'c-tablet', 'c-laptop', 'c-watch', 'c-laptop'])
      expect(await attributesOf(core, 'c-laptop')).toEqual({ email: 'ann@new.commit.test' })
      expect(await attributesOf(core, 'c-tablet')).toEqual({ email: 'ben@commit.test' })
      expect(await aliases(core)).toEqual([
        { alias_id: 'c-phone', end_user_id: 'c-tablet' },
        { alias_id: 'c-watch', end_user_id: 'c-laptop' },
      ])
    } finally {
      await core.close()
    }
  })

  test('in one commit, a device that is a person signs in as someone else: its other devices and later rows find the person it leaves', async () => {
    const core = await startCore()
    try {
      const row = (endUserId: string, attributes: Record<string, unknown>) => identifyRow(core, endUserId, attributes)
      await core.post('/api/ingestion/user/auth', { userId: 'x-ben', userAttributes: { email: 'ben@x.test' }, authFields: ['email'] })
      const rows = [
        // Ann, first seen on the desktop within this commit, and her phone; then Ben on the desktop.
        row('x-desk', { email: 'ann@x.test', name: 'Ann' }),
        row('x-phone', { email: 'ann@x.test' }),
        row('x-desk', { email: 'ben@x.test' }),
        // Her phone again, and a new device of hers, in the same commit.
        row('x-phone', { email: 'ann@x.test', plan: 'pro' }),
        row('x-tablet', { email: 'ann@x.test' }),
      ]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      const ann = rows[3].canonical!
      expect(rows.map((r) => r.canonical)).toEqual(['x-desk', 'x-desk', 'x-ben', ann, ann])
      expect(ann).not.toBe('x-desk')
      expect(await attributesOf(core, ann)).toEqual({ email: 'ann@x.test', name: 'Ann', plan: 'pro' })
      expect(await attributesOf(core, 'x-ben')).toEqual({ email: 'ben@x.test' })
      expect(await aliases(core)).toEqual([
        { alias_id: 'x-desk', end_user_id: 'x-ben' },
        { alias_id: 'x-phone', end_user_id: ann },
        { alias_id: 'x-tablet', end_user_id: ann },
      ])
    } finally {
      await core.close()
    }
  })

  test('in one commit, a device that leaves its person and is then left behind itself takes nothing of whom it was before', async () => {
    const core = await startCore()
    try {
      const row = (endUserId: string, attributes: Record<string, unknown>) => identifyRow(core, endUserId, attributes)
      const auth = (userId: string, userAttributes: Record<string, unknown>) => core.post('/api/ingestion/user/auth', { userId, userAttributes, authFields: ['email'] })
      await auth('y-desk', { email: 'ann@y.test', name: 'Ann' })
      await auth('y-ben', { email: 'ben@y.test' })
      await auth('y-dan', { email: 'dan@y.test' })
      const rows = [
        // The shared desktop: Ben (known), then Carl (never seen), then Dan (known); then Carl's phone.
        row('y-desk', { email: 'ben@y.test' }),
        row('y-desk', { email: 'carl@y.test' }),
        row('y-desk', { email: 'dan@y.test' }),
        row('y-phone', { email: 'carl@y.test' }),
      ]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      const carl = rows[3].canonical!
      expect(rows.map((r) => r.canonical)).toEqual(['y-ben', 'y-desk', 'y-dan', carl])
      expect(carl).not.toBe('y-desk')
      expect(await attributesOf(core, carl)).toEqual({ email: 'carl@y.test' })
      expect(await attributesOf(core, 'y-desk')).toEqual({})
      expect(await attributesOf(core, 'y-ben')).toEqual({ email: 'ben@y.test' })
      expect(await attributesOf(core, 'y-dan')).toEqual({ email: 'dan@y.test' })
    } finally {
      await core.close()
    }
  })

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

  test('identifies of a new session without a userId, at once, end with one end user for the session', async () => {
    for (const lingerMs of [0, 2]) {
      const core = await startCore({ writer: { lingerMs } })
      try {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            core.post(`/api/ingestion/user${i % 4 ? '' : '/auth'}`, { userId: null, userAttributes: { [`k${i}`]: i }, sessionId: 'new-s', authFields: [] }).then((r) => r.json()),
          ),
        )
        const made = new Set(answers.map((a) => a.endUserId))
        expect(made.size).toBe(1)
        const [endUserId] = made
        expect(await sessionEndUser(core, 'new-s')).toBe(endUserId)
        const users = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from end_users`)
        expect(users.map((u) => u.end_user_id)).toEqual([endUserId])
        expect(Object.keys((await attributesOf(core, endUserId)) as object)).toHaveLength(20)
      } finally {
        await core.close()
      }
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database answer a new session\'s identifies with one end user', async () => {
    const first = await startCore()
    const second = await startCoreBeside(first)
    try {
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 ? first : second)
              .post('/api/ingestion/user', { userId: null, userAttributes: { [`k${i}`]: i }, sessionId: `two-s${round}` }, { key: first.key })
              .then((r) => r.json()),
          ),
        )
        expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
        expect(await sessionEndUser(first, `two-s${round}`)).toBe(answers[0].endUserId)
      }
      const [{ n }] = await first.database.db.rows<{ n: number }>(sql`select count(*)::int as n from end_users`)
      expect(n).toBe(5)
    } finally {
      await second.close()
      await first.close()
    }
  })

  test.skipIf(engine !== 'postgres')('an alias leaving its person, sent through two cores at once (a retry), ends a person of its own, once', async () => {
    const first = await startCore({ writer: { lingerMs: 1 } })
    const second = await startCoreBeside(first)
    const auth = (core: TestCore, userId: string, email: string) =>
      core.post('/api/ingestion/user/auth', { userId, userAttributes: { email }, authFields: ['email'] }, { key: first.key }).then((r) => r.json())
    try {
      for (let round = 0; round < 5; round++) {
        const [ann, tablet] = [`ann-${round}`, `tablet-${round}`]
        expect((await auth(first, ann, `${ann}@two.test`)).endUserId).toBe(ann)
        expect((await auth(second, tablet, `${ann}@two.test`)).endUserId).toBe(ann)
        const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => auth(i % 2 ? first : second, tablet, `ben-${round}@two.test`)))
        expect(answers.map((a) => a.endUserId)).toEqual(answers.map(() => tablet))
        expect(await attributesOf(first, ann)).toEqual({ email: `${ann}@two.test` })
      }
      expect(await aliases(first)).toEqual([])
    } finally {
      await second.close()
      await first.close()
    }
  })

  test.skipIf(engine !== 'postgres')('two cores sharing one database agree on the person, each sent the email in other spellings', async () => {
    const first = await startCore({ writer: { lingerMs: 1 } })
    const second = await startCoreBeside(first)
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? first : second)
            .post('/api/ingestion/user/auth', { userId: `two-${i}`, userAttributes: { email: i % 4 < 2 ? 'Shared@Shop.test' : 'shared@shop.test ' }, authFields: ['email'] }, { key: first.key })
            .then((r) => r.json()),
        ),
      )
      expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
      expect(await aliases(first)).toHaveLength(39)
    } finally {
      await second.close()
      await first.close()
    }
  })
})
