import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { authValues } from '@sightline/core/ingest/identity/service'
import { identitySink } from '@sightline/core/ingest/identity/store'
import { startCore, type TestCore } from '../../helpers/core'
import { identifyRow } from '../../helpers/identity'

// One person signs in as `Ana@Example.com` on a laptop and `ana@example.com` on a phone: an email
// address is the same in any case and without whitespace around it (README: auth-aware identify),
// whether the two identifies commit apart, in one commit, or through two core processes at once.

const attributesOf = async (core: TestCore, endUserId: string) =>
  (await core.database.db.rows<{ attributes: unknown }>(sql`select attributes from end_users where end_user_id = ${endUserId}`))[0]?.attributes
const aliases = (core: TestCore) =>
  core.database.db.rows<{ alias_id: string; end_user_id: string }>(sql`select alias_id, end_user_id from end_user_aliases order by alias_id`)

describe('auth values', () => {
  test('a text of only whitespace is no value, as an empty one is none', () => {
    expect(authValues({ email: ' \t\n ' }, ['email'])).toBeNull()
    expect(authValues({ email: ' a@x ' }, ['email'])).toEqual({ email: ' a@x ' })
  })
})

describe('auth-aware identify of an email in another spelling, commit after commit', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const auth = async (userId: string, userAttributes: Record<string, unknown>, authFields = ['email']) =>
    (await (await core.post('/api/ingestion/user/auth', { userId, userAttributes, sessionId: `s-${userId}`, authFields })).json()).endUserId

  test('another case and whitespace around it are the same person; the attribute is stored as sent last', async () => {
    expect(await auth('ana-laptop', { email: 'Ana@Example.com', name: 'Ana' })).toBe('ana-laptop')
    expect(await auth('ana-phone', { email: 'ana@example.com' })).toBe('ana-laptop')
    expect(await auth('ana-tablet', { email: ' ANA@EXAMPLE.COM\t' })).toBe('ana-laptop')
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('ana-'))).toEqual([
      { alias_id: 'ana-phone', end_user_id: 'ana-laptop' },
      { alias_id: 'ana-tablet', end_user_id: 'ana-laptop' },
    ])
    expect(await attributesOf(core, 'ana-laptop')).toEqual({ email: ' ANA@EXAMPLE.COM\t', name: 'Ana' })
    // A device of hers signing in again in another spelling stays hers: not someone else on it.
    expect(await auth('ana-phone', { email: 'Ana@example.COM' })).toBe('ana-laptop')
    expect(await auth('ana-laptop', { email: 'ana@example.com' })).toBe('ana-laptop')
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('ana-'))).toHaveLength(2)
  })

  test('an address is an address whatever its field is called, and beside other fields compared exactly', async () => {
    expect(await auth('lg-1', { login: 'Lee@Shop.test', tenant: 't1' }, ['login', 'tenant'])).toBe('lg-1')
    expect(await auth('lg-2', { login: 'lee@shop.test', tenant: 't1' }, ['login', 'tenant'])).toBe('lg-1')
    expect(await auth('lg-3', { login: 'lee@shop.test', tenant: 'T1' }, ['login', 'tenant'])).toBe('lg-3')
  })

  test('texts that are no address are compared exactly, whatever their field is called', async () => {
    expect(await auth('ex-1', { email: 'Ex' })).toBe('ex-1')
    expect(await auth('ex-2', { email: 'ex' })).toBe('ex-2')
    expect(await auth('ex-3', { email: ' Ex' })).toBe('ex-3')
    expect(await auth('id-1', { id: 'AB12' }, ['id'])).toBe('id-1')
    expect(await auth('id-2', { id: 'ab12' }, ['id'])).toBe('id-2')
    // Not an address: two `@`, or whitespace inside.
    expect(await auth('at-1', { email: 'A@b@c' })).toBe('at-1')
    expect(await auth('at-2', { email: 'a@b@c' })).toBe('at-2')
    expect(await auth('sp-1', { email: 'A b@c' })).toBe('sp-1')
    expect(await auth('sp-2', { email: 'a b@c' })).toBe('sp-2')
  })

  test('a device signing in with another address in any spelling is someone else: it moves alone', async () => {
    expect(await auth('sh-desk', { email: 'Dee@Shop.test' })).toBe('sh-desk')
    expect(await auth('sh-phone', { email: 'dee@shop.test' })).toBe('sh-desk')
    expect(await auth('eve-laptop', { email: 'eve@shop.test' })).toBe('eve-laptop')
    // Eve on Dee's desktop: Dee stays a person, with her phone, under a new id.
    expect(await auth('sh-desk', { email: 'EVE@shop.test' })).toBe('eve-laptop')
    const dee = (await aliases(core)).find((a) => a.alias_id === 'sh-phone')!.end_user_id
    expect(dee).not.toBe('sh-desk')
    expect(await attributesOf(core, dee)).toEqual({ email: 'dee@shop.test' })
    expect(await auth('sh-new', { email: 'DEE@SHOP.TEST ' })).toBe(dee)
  })

  test('a person stored apart before this rule, in another spelling, that signs in as the first seen comes whole: it is not someone else on its device', async () => {
    expect(await auth('old-first', { email: 'old@shop.test', plan: 'pro' })).toBe('old-first')
    await core.database.db.rows(sql`
      insert into end_users (project_id, end_user_id, attributes, first_seen_at) values (${core.project.projectId}, 'old-second', '{"email": "Old@Shop.test", "seat": 2}', now() + interval '1 second')`)
    // The later one, in yet another spelling: the same person as the first seen, not someone else on its device.
    expect(await auth('old-second', { email: 'OLD@shop.test' })).toBe('old-first')
    expect((await aliases(core)).filter((a) => a.alias_id.startsWith('old-'))).toEqual([{ alias_id: 'old-second', end_user_id: 'old-first' }])
    expect(await attributesOf(core, 'old-first')).toEqual({ email: 'OLD@shop.test', plan: 'pro', seat: 2 })
  })

  test('whitespace alone is no value: such visitors stay apart', async () => {
    expect(await auth('blank-1', { email: '  ' })).toBe('blank-1')
    expect(await auth('blank-2', { email: '  ' })).toBe('blank-2')
  })
})

describe('auth-aware identify of an email in another spelling, at once', () => {
  test('in one commit, the second finds the person the first made', async () => {
    const core = await startCore()
    try {
      const rows = [identifyRow(core, 'one-laptop', { email: 'Ana@Example.com' }), identifyRow(core, 'one-phone', { email: ' ana@example.com' })]
      await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
      expect(rows.map((r) => r.canonical)).toEqual(['one-laptop', 'one-laptop'])
      expect(await aliases(core)).toEqual([{ alias_id: 'one-phone', end_user_id: 'one-laptop' }])
      expect(await attributesOf(core, 'one-laptop')).toEqual({ email: ' ana@example.com' })
    } finally {
      await core.close()
    }
  })

  test('devices signing in at once, each in its own spelling, end as one person', async () => {
    const core = await startCore({ writer: { lingerMs: 2 } })
    try {
      const spellings = ['Same@Shop.test', 'same@shop.test', 'SAME@SHOP.TEST', ' same@Shop.test ']
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          core.post('/api/ingestion/user/auth', { userId: `at-once-${i}`, userAttributes: { email: spellings[i % 4] }, authFields: ['email'] }).then((r) => r.json()),
        ),
      )
      expect(new Set(answers.map((a) => a.endUserId)).size).toBe(1)
      expect(await aliases(core)).toHaveLength(19)
    } finally {
      await core.close()
    }
  })
})
