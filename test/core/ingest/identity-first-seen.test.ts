import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { IdentifyRow } from '@sightline/core/ingest/identity/service'
import { identitySink } from '@sightline/core/ingest/identity/store'
import { startCore, type TestCore } from '../../helpers/core'
import { identifyRow } from '../../helpers/identity'

// "The first-seen person" of auth-aware identify, when first-seen times are only receipt stand-ins
// (`times_are_receipt`, made by a replay chunk with no valid event) or are being written by the same commit.

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const row = (endUserId: string, attributes: Record<string, unknown>, authFields: string[] | null = ['email']) => identifyRow(core, endUserId, attributes, authFields)
/** The rows handed to the writer as one commit, as concurrent requests are. */
const inOneCommit = (rows: IdentifyRow[]) =>
  core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: rows.length, bytes: 100, writes: [{ sink: identitySink, rows }] })
const auth = async (userId: string, userAttributes: Record<string, unknown>) => {
  const res = await core.post('/api/ingestion/user/auth', { userId, userAttributes, authFields: ['email'] })
  expect(res.status).toBe(200)
  return ((await res.json()) as { endUserId: string }).endUserId
}
const plain = async (userId: string, userAttributes: Record<string, unknown>) =>
  expect((await core.post('/api/ingestion/user', { userId, userAttributes })).status).toBe(200)
/** A replay chunk with no valid event: it creates the end user at its receipt, marked as a stand-in. */
const quietChunk = async (sessionId: string, endUserId: string) =>
  expect(await (await core.post('/api/ingestion/events', { sessionId, endUserId, events: [{ nope: true }] })).json()).toEqual({ success: true, accepted: 0, dropped: 1 })
const endUser = async (endUserId: string) =>
  (
    await core.database.db.rows<{ first: string; last: string; receipt: boolean | null; attributes: unknown }>(sql`
      select (extract(epoch from first_seen_at) * 1000)::bigint::text as first, (extract(epoch from last_seen_at) * 1000)::bigint::text as last,
        times_are_receipt as receipt, attributes
      from end_users where project_id = ${core.project.projectId} and end_user_id = ${endUserId}`)
  )[0]

describe('the first-seen person', () => {
  test('an end user whose first-seen is a receipt stand-in does not win on it when the same commit identifies it', async () => {
    // q-late was created by a quiet chunk (its receipt stands in); p-early is then seen, with the email.
    await quietChunk('fs-s1', 'q-late')
    expect((await endUser('q-late')).receipt).toBe(true)
    await pause(20)
    await auth('p-early', { email: 'ann@fs1.test' })
    await pause(20)
    // One commit: q-late is identified with the same email (its first activity: it replaces the
    // stand-in, so q-late is first seen now), then a new device signs in with it.
    const rows = [row('q-late', { email: 'ann@fs1.test' }, null), row('r-new', { email: 'ann@fs1.test' })]
    await inOneCommit(rows)
    const early = await endUser('p-early')
    const late = await endUser('q-late')
    expect(late.receipt).toBeNull()
    expect(Number(late.first)).toBeGreaterThan(Number(early.first))
    expect(rows[1].canonical).toBe('p-early')
    // The same answer as a commit of its own gives.
    expect(await auth('s-next', { email: 'ann@fs1.test' })).toBe('p-early')
  })

  test('a person left behind by a device whose row was a receipt stand-in is first seen at its first activity, not at that receipt', async () => {
    await quietChunk('fs-s2', 'd-desk')
    const receipt = Number((await endUser('d-desk')).first)
    await pause(20)
    await auth('b-ben', { email: 'ben@fs2.test' })
    await pause(20)
    // One commit: Ann on the desktop (its first activity), then Ben signs in on it: Ann stays a person of her own.
    const rows = [row('d-desk', { email: 'ann@fs2.test' }, null), row('d-desk', { email: 'ben@fs2.test' })]
    await inOneCommit(rows)
    expect(rows[1].canonical).toBe('b-ben')
    const [{ end_user_id: ann }] = await core.database.db.rows<{ end_user_id: string }>(
      sql`select end_user_id from end_users where project_id = ${core.project.projectId} and attributes @> '{"email":"ann@fs2.test"}'`,
    )
    const left = await endUser(ann)
    expect(left.receipt).toBeNull()
    expect(Number(left.first)).toBeGreaterThanOrEqual(rows[0].at - 1)
    expect(Number(left.first)).toBeGreaterThan(receipt)
  })

  test('a person left behind by a row that holds only a receipt stand-in holds that stand-in, marked, for its first activity to replace', async () => {
    // No route leaves attributes on a row whose times are a stand-in (an identify is activity), but a
    // row may hold them (written by another version); the person made from it must not take the
    // receipt for a real first-seen.
    await quietChunk('fs-s4', 'm-desk')
    await core.database.db.orm.execute(sql`update end_users set attributes = '{"email":"ann@fs4.test"}' where end_user_id = 'm-desk'`)
    const receipt = await endUser('m-desk')
    await auth('m-ben', { email: 'ben@fs4.test' })
    expect(await auth('m-desk', { email: 'ben@fs4.test' })).toBe('m-ben')
    const [{ end_user_id: ann }] = await core.database.db.rows<{ end_user_id: string }>(
      sql`select end_user_id from end_users where project_id = ${core.project.projectId} and attributes @> '{"email":"ann@fs4.test"}'`,
    )
    expect(await endUser(ann)).toEqual({ ...receipt, receipt: true })
    // Ann seen on a device of her own: that is her first activity, and she is that device's person.
    await pause(20)
    const before = Date.now()
    await plain(ann, { name: 'Ann' })
    const seen = await endUser(ann)
    expect(seen.receipt).toBeNull()
    expect(Number(seen.first)).toBeGreaterThanOrEqual(before - 1)
  })

  test('a person left behind in a commit keeps its place among people with its values for later rows of that commit', async () => {
    // Ann first seen on the desktop; another end user given her email later by a plain identify;
    // the desktop seen again after that.
    await auth('l-desk', { email: 'ann@fs3.test' })
    await pause(20)
    await plain('l-other', { email: 'ann@fs3.test' })
    await pause(20)
    await plain('l-desk', { seen: 'again' })
    await auth('l-ben', { email: 'ben@fs3.test' })
    await pause(20)
    // One commit: Ben signs in on the desktop (Ann is left behind under a new id, first seen when
    // the desktop was), then Ann on her phone: Ann's person is the first seen with her email.
    const rows = [row('l-desk', { email: 'ben@fs3.test' }), row('l-phone', { email: 'ann@fs3.test' })]
    await inOneCommit(rows)
    const ann = rows[1].canonical!
    expect(ann).not.toBe('l-other')
    expect((await endUser(ann)).attributes).toEqual({ email: 'ann@fs3.test', seen: 'again' })
    expect(await auth('l-tablet', { email: 'ann@fs3.test' })).toBe(ann)
  })
})
