import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { IdentifyRow } from '@sightline/core/ingest/identity/service'
import { IDENTITY_LOCK_CLASS, identitySink } from '@sightline/core/ingest/identity/store'
import type { EndUserTouch } from '@sightline/core/ingest/sessions/service'
import { endUsersSink } from '@sightline/core/ingest/sessions/store'
import { startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

// Two commits deadlock when each holds a row the other wants next; Postgres breaks the circle only
// after a second, failing one of them. A commit of identifies therefore takes the identity lock before
// any end user, and locks all of its end users (those its events touch and those it identifies) in one
// statement, sorted. Here another transaction holds what the commit needs first, and the test looks
// at what the waiting commit holds meanwhile. Postgres only (locks between connections).

let core: TestCore
beforeAll(async () => {
  if (engine !== 'postgres') return
  core = await startCore()
  for (const userId of ['lock-a', 'lock-b']) expect((await core.post('/api/ingestion/user', { userId, userAttributes: {} })).status).toBe(200)
})
afterAll(() => core?.close())

const touch = (endUserId: string): EndUserTouch => ({ projectId: core.project.projectId, endUserId, at: Date.now(), attributes: { touched: true } })
const identify = (endUserId: string, auth: Record<string, unknown> | null = null): IdentifyRow => ({
  projectId: core.project.projectId,
  endUserId,
  sessionOfMadeId: null,
  attributes: { identified: true, ...auth },
  auth,
  at: Date.now(),
})

/** Writes one request of an event's end-user touch and an identify: one commit. */
const commitOf = (touched: string, identified: IdentifyRow) =>
  core.services.writer.write({
    projectId: core.project.projectId,
    monthlyLimit: null,
    items: 2,
    bytes: 100,
    writes: [
      { sink: endUsersSink, rows: [touch(touched)] },
      { sink: identitySink, rows: [identified] },
    ],
  })

/** Runs `statements` in a transaction of their own, kept open until the returned release is called. */
async function holding(...statements: ReturnType<typeof sql>[]): Promise<() => Promise<void>> {
  let release!: () => void
  let held!: () => void
  const isHeld = new Promise<void>((resolve) => (held = resolve))
  const done = core.database.db.orm.transaction(async (tx) => {
    for (const statement of statements) await tx.execute(statement)
    held()
    await new Promise<void>((resolve) => (release = resolve))
  })
  await isHeld
  return async () => {
    release()
    await done
  }
}

async function untilAWriteWaitsOnALock(): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const [{ n }] = await core.database.db.rows<{ n: number }>(
      sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    )
    if (n > 0) return
    await Bun.sleep(10)
  }
  throw new Error('no commit came to wait on the lock')
}

/** Commits `row` alone, once it waits on a lock another transaction holds (`release` ends that transaction). */
async function writeWhileWaiting(row: IdentifyRow, release: () => Promise<void>): Promise<void> {
  const written = core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: 1, bytes: 100, writes: [{ sink: identitySink, rows: [row] }] })
  try {
    await untilAWriteWaitsOnALock()
  } finally {
    await release()
    await written
  }
}

/** Whether another transaction could lock the end user now. */
const lockable = async (endUserId: string) => {
  try {
    await core.database.db.rows(sql`select 1 from end_users where end_user_id = ${endUserId} for update nowait`)
    return true
  } catch {
    return false
  }
}

/**
 * Whether another transaction could lock `endUserId` while the commit `write` starts waits on what
 * `hold` holds in a transaction of its own; the commit then goes on and ends.
 */
async function lockableWhileWaiting(hold: ReturnType<typeof sql>, write: () => Promise<void>, endUserId: string): Promise<boolean> {
  const release = await holding(hold)
  const written = write()
  try {
    await untilAWriteWaitsOnALock()
    return await lockable(endUserId)
  } finally {
    await release()
    await written
  }
}

describe.skipIf(engine !== 'postgres')('the locks a commit of identifies takes', () => {
  test('waiting for the end user it identifies, it holds none of the end users its events touch after it', async () => {
    const hold = sql`select 1 from end_users where end_user_id = 'lock-a' for update`
    expect(await lockableWhileWaiting(hold, () => commitOf('lock-b', identify('lock-a')), 'lock-b')).toBe(true)
    const stored = await core.database.db.rows(sql`select end_user_id, attributes from end_users where end_user_id in ('lock-a', 'lock-b') order by 1`)
    expect(stored).toEqual([
      { end_user_id: 'lock-a', attributes: { identified: true } },
      { end_user_id: 'lock-b', attributes: { touched: true } },
    ])
  })

  test('waiting for the identity lock, an auth-aware identify holds no end user', async () => {
    const hold = sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`
    expect(await lockableWhileWaiting(hold, () => commitOf('lock-b', identify('lock-c', { email: 'c@locks.test' })), 'lock-b')).toBe(true)
    const [person] = await core.database.db.rows(sql`select attributes from end_users where end_user_id = 'lock-c'`)
    expect(person).toEqual({ attributes: { identified: true, email: 'c@locks.test' } })
  })
})

describe.skipIf(engine !== 'postgres')('the identity lock a plain identify takes, shared', () => {
  const lock = (mode: 'exclusive' | 'shared') =>
    mode === 'exclusive'
      ? sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`
      : sql`select pg_advisory_xact_lock_shared(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`

  test('waiting for an auth-aware identify under way, it holds none of the end users its events touch', async () => {
    expect(await lockableWhileWaiting(lock('exclusive'), () => commitOf('lock-b', identify('lock-d')), 'lock-b')).toBe(true)
    const [identified] = await core.database.db.rows(sql`select attributes from end_users where end_user_id = 'lock-d'`)
    expect(identified).toEqual({ attributes: { identified: true } })
  })

  test('plain identifies do not wait on each other', async () => {
    const release = await holding(lock('shared'))
    try {
      const written = commitOf('lock-b', identify('lock-e')).then(() => 'written')
      expect(await Promise.race([written, Bun.sleep(3_000).then(() => 'waited')])).toBe('written')
    } finally {
      await release()
    }
  })
})

describe.skipIf(engine !== 'postgres')('what a commit of identifies reads once it holds the identity lock', () => {
  test('the people its end users are aliases of, as the commit it waited for left them', async () => {
    // Ann's desktop, a person, and her phone, its alias.
    await core.post('/api/ingestion/user/auth', { userId: 'st-desk', userAttributes: { email: 'ann@stale.test' }, authFields: ['email'] })
    expect((await core.post('/api/ingestion/user/auth', { userId: 'st-phone', userAttributes: { email: 'ann@stale.test' }, authFields: ['email'] }).then((r) => r.json())).endUserId).toBe('st-desk')
    // Another commit holds the lock and, meanwhile, leaves Ann behind under another id, as a desktop
    // signing in as someone else does; the phone's sign-in waits for it.
    const release = await holding(
      sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`,
      sql`insert into end_users (project_id, end_user_id, attributes) values (${core.project.projectId}, 'st-ann', '{"email":"ann@stale.test"}'::jsonb)`,
      sql`update end_user_aliases set end_user_id = 'st-ann' where project_id = ${core.project.projectId} and end_user_id = 'st-desk'`,
    )
    const row = identify('st-phone', { phone: '555-0606' })
    await writeWhileWaiting(row, release)
    expect(row.canonical).toBe('st-ann')
    const [ann] = await core.database.db.rows(sql`select attributes from end_users where end_user_id = 'st-ann'`)
    expect(ann).toEqual({ attributes: { email: 'ann@stale.test', identified: true, phone: '555-0606' } })
  })
})

describe.skipIf(engine !== 'postgres')('a plain identify of an end user another commit is making an alias', () => {
  test('its attributes go to the person, where lookups read them, not to the alias\'s own row', async () => {
    // Ann, a person, and a phone that is a person of its own so far.
    expect((await core.post('/api/ingestion/user/auth', { userId: 'pa-ann', userAttributes: { email: 'ann@plain.test' }, authFields: ['email'] })).status).toBe(200)
    expect((await core.post('/api/ingestion/user', { userId: 'pa-phone', userAttributes: { device: 'phone' } })).status).toBe(200)
    // Another commit (another process's, or the writer's other one) makes the phone Ann's alias, as
    // an auth-aware identify does: under the identity lock, clearing the phone's own attributes.
    // Meanwhile the phone is identified plainly.
    const release = await holding(
      sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`,
      sql`insert into end_user_aliases (project_id, alias_id, end_user_id) values (${core.project.projectId}, 'pa-phone', 'pa-ann')`,
      sql`update end_users set attributes = '{}'::jsonb where project_id = ${core.project.projectId} and end_user_id = 'pa-phone'`,
    )
    const row: IdentifyRow = { ...identify('pa-phone'), attributes: { plan: 'pro' } }
    await writeWhileWaiting(row, release)
    expect(row.canonical).toBe('pa-ann')
    const stored = await core.database.db.rows(sql`select end_user_id, attributes from end_users where end_user_id in ('pa-ann', 'pa-phone') order by 1`)
    expect(stored).toEqual([
      { end_user_id: 'pa-ann', attributes: { email: 'ann@plain.test', plan: 'pro' } },
      { end_user_id: 'pa-phone', attributes: {} },
    ])
  })
})
