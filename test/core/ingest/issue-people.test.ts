import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { IDENTITY_LOCK_CLASS } from '@sightline/core/ingest/identity/store'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

/*
 * An Issue's affected users are people: the devices (end users) that auth-aware identify found to be
 * one person count once, as the dashboard shows them as one.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const signIn = async (userId: string, email: string) => {
  const res = await core.post('/api/ingestion/user/auth', { userId, userAttributes: { email }, sessionId: `s-${userId}`, authFields: ['email'] })
  expect(res.status).toBe(200)
  return ((await res.json()) as { endUserId: string }).endUserId
}
const report = (fn: string, endUserId: string | undefined, at: number) => ({
  sessionId: `s-${endUserId}`,
  ...(endUserId && { endUserId }),
  name: 'TypeError',
  message: 'total is undefined',
  stack: `TypeError: total is undefined\n    at ${fn} (https://shop.example/assets/app.js:41:23)`,
  timestampMs: at,
})
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/errors', body)
  expect(res.status).toBe(200)
  return ((await res.json()) as { issues: string[] }).issues
}
const counted = async (issueId: string) => {
  const [issue] = await core.database.db.rows<{ affected_users: number; occurrences: number }>(
    sql`select affected_users::int as affected_users, occurrences::int as occurrences from issues where issue_id = ${issueId}`,
  )
  const users = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from issue_end_users where issue_id = ${issueId} order by end_user_id`)
  return { ...issue, users: users.map((u) => u.end_user_id) }
}

describe('affected users of an Issue are people', () => {
  test("two devices of one person (aliased before the reports) count once, in separate requests and in one batch", async () => {
    expect(await signIn('ann-laptop', 'ann@shop.test')).toBe('ann-laptop')
    expect(await signIn('ann-phone', 'ann@shop.test')).toBe('ann-laptop')
    const now = Date.now()
    const [issueId] = await send(report('renderPeople', 'ann-laptop', now - 3_000))
    expect(await send(report('renderPeople', 'ann-phone', now - 2_000))).toEqual([issueId])
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['ann-laptop'] })

    // In one batch, the alias listed first, and someone else beside them.
    const [batched] = await send({ sessionId: 's-batch', errors: [report('renderBatch', 'ann-phone', now - 1_000), report('renderBatch', 'ann-laptop', now - 900), report('renderBatch', 'bo', now - 800)] })
    expect(await counted(batched)).toEqual({ occurrences: 3, affected_users: 2, users: ['ann-laptop', 'bo'] })
  })

  test("concurrent reports of a person's two devices count once", async () => {
    await signIn('cy-laptop', 'cy@shop.test')
    await signIn('cy-phone', 'cy@shop.test')
    const now = Date.now()
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => send(report('renderConcurrent', i % 2 ? 'cy-phone' : 'cy-laptop', now - 1_000 + i))),
    )
    expect(await counted(answers[0][0])).toEqual({ occurrences: 8, affected_users: 1, users: ['cy-laptop'] })
  })

  test("a report naming no end user, of a session whose end user is an alias, counts the alias's person", async () => {
    await signIn('di-laptop', 'di@shop.test')
    await signIn('di-phone', 'di@shop.test')
    const now = Date.now()
    const [issueId] = await send(report('renderSession', 'di-laptop', now - 2_000))
    // The session `s-di-phone` has end user di-phone (signIn named it); the report does not.
    expect(await send({ ...report('renderSession', undefined, now - 1_000), sessionId: 's-di-phone' })).toEqual([issueId])
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['di-laptop'] })
    expect(await core.database.db.rows(sql`select end_user_id from error_events where issue_id = ${issueId} order by end_user_id`)).toEqual([
      { end_user_id: 'di-laptop' },
      { end_user_id: 'di-phone' },
    ])
  })
})

/*
 * A device made an alias after its reports: the commit making the alias moves what the device counted
 * to the person, so the person still counts once.
 */
describe('a device made an alias after its reports', () => {
  test('signing in as a person who reported the same Issue, it counts as that person, once', async () => {
    expect(await signIn('eve-laptop', 'eve@shop.test')).toBe('eve-laptop')
    const now = Date.now()
    const [issueId] = await send(report('renderLater', 'eve-phone', now - 3_000))
    await send(report('renderLater', 'eve-laptop', now - 2_000))
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 2, users: ['eve-laptop', 'eve-phone'] })
    expect(await signIn('eve-phone', 'eve@shop.test')).toBe('eve-laptop')
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['eve-laptop'] })
    // Reported from the phone again, it counts nothing more.
    await send(report('renderLater', 'eve-phone', now - 1_000))
    expect(await counted(issueId)).toEqual({ occurrences: 3, affected_users: 1, users: ['eve-laptop'] })
  })

  test('an Issue only the device reported moves to the person, its count unchanged', async () => {
    await signIn('fay-laptop', 'fay@shop.test')
    const [issueId] = await send(report('renderOnlyPhone', 'fay-phone', Date.now() - 1_000))
    expect(await signIn('fay-phone', 'fay@shop.test')).toBe('fay-laptop')
    expect(await counted(issueId)).toEqual({ occurrences: 1, affected_users: 1, users: ['fay-laptop'] })
  })

  test('a person coming whole brings what its aliases counted; a shared device moving alone leaves it with the someone else who stays', async () => {
    // Gus: a laptop, and a tablet (a person, with a phone aliased to it), found by other fields.
    await signIn('gus-laptop', 'gus@shop.test')
    const auth = (userId: string, userAttributes: object, authFields: string[]) =>
      core.post('/api/ingestion/user/auth', { userId, userAttributes, sessionId: `s-${userId}`, authFields }).then(async (r) => {
        expect(r.status).toBe(200)
        return ((await r.json()) as { endUserId: string }).endUserId
      })
    await auth('gus-tablet', { phone: '555-0100' }, ['phone'])
    expect(await auth('gus-phone', { phone: '555-0100' }, ['phone'])).toBe('gus-tablet')
    const now = Date.now()
    const [issueId] = await send({ sessionId: 's-gus', errors: [report('renderWhole', 'gus-laptop', now - 3_000), report('renderWhole', 'gus-phone', now - 2_000)] })
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 2, users: ['gus-laptop', 'gus-tablet'] })
    expect(await auth('gus-tablet', { phone: '555-0100', email: 'gus@shop.test' }, ['email'])).toBe('gus-laptop')
    expect(await counted(issueId)).toEqual({ occurrences: 2, affected_users: 1, users: ['gus-laptop'] })

    // A shared computer Hal used, and reported from, on which Ivy signs in: Hal stays a person under a
    // new id, with what the computer counted for him.
    await signIn('ivy-laptop', 'ivy@shop.test')
    await signIn('shared-pc', 'hal@shop.test')
    const [shared] = await send(report('renderShared', 'shared-pc', now - 1_000))
    await send(report('renderShared', 'ivy-laptop', now - 900))
    expect(await signIn('shared-pc', 'ivy@shop.test')).toBe('ivy-laptop')
    const [hal] = await core.database.db.rows<{ end_user_id: string }>(sql`select end_user_id from end_users where attributes->>'email' = 'hal@shop.test'`)
    expect(hal.end_user_id).not.toBe('shared-pc')
    expect(await counted(shared)).toEqual({ occurrences: 2, affected_users: 2, users: [hal.end_user_id, 'ivy-laptop'].sort() })
  })

  test("concurrent reports and sign-ins through two cores: each Issue counts its people, once each, without deadlock", async () => {
    const { log, lines } = memoryLogger('warn')
    const first = await startCore({ database: core.database, log })
    const second = await startCore({ database: core.database, log })
    try {
      const people = Array.from({ length: 6 }, (_, i) => `jo${i}`)
      const through = (i: number) => (i % 2 ? second : first)
      const post = async (i: number, path: string, body: object) => {
        const res = await through(i).post(path, body, { key: core.key })
        expect(res.status).toBe(200)
      }
      for (const p of people) await signIn(`${p}-laptop`, `${p}@race.test`)
      const now = Date.now()
      // Each phone reports two Issues before, during and after it signs in as its person, whose laptop
      // reports one of them too, all at once through both cores.
      const requests = people.flatMap((p, i) => [
        ...Array.from({ length: 3 }, (_, n) => post(i + n, '/api/ingestion/errors', { sessionId: `s-${p}-phone`, errors: [report('renderRaceA', `${p}-phone`, now - 900 + n), report('renderRaceB', `${p}-phone`, now - 800 + n)] })),
        post(i + 1, '/api/ingestion/user/auth', { userId: `${p}-phone`, userAttributes: { email: `${p}@race.test` }, sessionId: `s-${p}-phone`, authFields: ['email'] }),
        post(i, '/api/ingestion/errors', report('renderRaceA', `${p}-laptop`, now - 700)),
      ])
      await Promise.all(requests)
      const issues = await core.database.db.rows<{ affected_users: number; rows: number; keys: string[] }>(sql`
        select i.affected_users::int as affected_users, count(u.end_user_id)::int as rows, array_agg(u.end_user_id order by u.end_user_id) as keys
        from issues i join issue_end_users u on u.project_id = i.project_id and u.issue_id = i.issue_id
        where i.project_id = ${core.project.projectId} and u.end_user_id like 'jo%'
        group by i.issue_id, i.affected_users`)
      const laptops = people.map((p) => `${p}-laptop`)
      expect(issues.map(({ affected_users, rows, keys }) => ({ affected_users, rows, keys }))).toEqual([
        { affected_users: people.length, rows: people.length, keys: laptops },
        { affected_users: people.length, rows: people.length, keys: laptops },
      ])
      expect(lines.filter((line) => /retried|deadlock/i.test(line))).toEqual([])
    } finally {
      await first.close()
      await second.close()
    }
  })
})

describe.skipIf(engine !== 'postgres')('an error report while another commit makes its device an alias', () => {
  test('waits for that commit, and counts the person, where the move would not have seen its row', async () => {
    await signIn('kim-laptop', 'kim@shop.test')
    // Another commit (another process's) makes the phone Kim's alias, as an auth-aware identify does,
    // under the identity lock; it moved the phone's rows already (it had none). Meanwhile the phone reports.
    let release!: () => void
    let held!: () => void
    const isHeld = new Promise<void>((resolve) => (held = resolve))
    const aliasing = core.database.db.orm.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${core.project.projectId}))`)
      await tx.execute(sql`insert into end_user_aliases (project_id, alias_id, end_user_id) values (${core.project.projectId}, 'kim-phone', 'kim-laptop')`)
      held()
      await new Promise<void>((resolve) => (release = resolve))
    })
    await isHeld
    const reported = send(report('renderDuringAlias', 'kim-phone', Date.now() - 1_000))
    try {
      for (let tries = 0; ; tries++) {
        const [{ n }] = await core.database.db.rows<{ n: number }>(
          sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        )
        if (n > 0) break
        if (tries > 100) throw new Error('the report did not wait for the identity lock')
        await Bun.sleep(10)
      }
    } finally {
      release()
      await aliasing
    }
    const [issueId] = await reported
    expect(await counted(issueId)).toEqual({ occurrences: 1, affected_users: 1, users: ['kim-laptop'] })
  })
})
