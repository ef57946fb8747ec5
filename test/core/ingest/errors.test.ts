import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { errorRows, reportedFrames } from '@sightline/core/ingest/errors/service'
import { errorEventsSink, setIssueStatus } from '@sightline/core/ingest/errors/store'
import { symbolicate } from '@sightline/core/ingest/errors/symbolicate'
import { startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const rows = <T>(query: ReturnType<typeof sql>) => core.database.db.rows<T>(query)
interface IssueRow {
  status: string
  is_regression: boolean
  occurrences: number
  affected_users: number
  title: string
  culprit: string | null
  level: string
  first_release: string | null
  last_release: string | null
  first: string
  last: string
  resolved: boolean
}
const issue = async (issueId: string): Promise<IssueRow> =>
  (
    await rows<IssueRow>(sql`
      select status, is_regression, occurrences::int as occurrences, affected_users::int as affected_users, title, culprit, level, first_release, last_release,
        (extract(epoch from first_seen_at) * 1000)::bigint::text as first, (extract(epoch from last_seen_at) * 1000)::bigint::text as last,
        resolved_at is not null as resolved
      from issues where issue_id = ${issueId}`)
  )[0]
const send = async (body: object) => {
  const res = await core.post('/api/ingestion/errors', body)
  expect(res.status).toBe(200)
  return (await res.json()) as { success: true; accepted: number; issues: string[] }
}

// The same bug as three engines report it, from app code served unminified under a hashed name.
const CHROME = `TypeError: Cannot read properties of undefined (reading 'price')
    at CartView.renderTotal (https://shop.example/assets/cart.3f2a1b9c.js:41:23)
    at https://shop.example/assets/cart.3f2a1b9c.js:12:9
    at Array.forEach (<anonymous>)
    at render (https://shop.example/assets/cart.3f2a1b9c.js:11:11)`
const FIREFOX = `renderTotal@https://shop.example/assets/cart.3f2a1b9c.js:41:23
render/<@https://shop.example/assets/cart.3f2a1b9c.js:12:9
render@https://shop.example/assets/cart.3f2a1b9c.js:11:11
`
const SAFARI = `renderTotal@https://shop.example/assets/cart.77e0d1aa.js?v=2:41:31
forEach@[native code]
render@https://shop.example/assets/cart.77e0d1aa.js?v=2:11:19`

const report = (extra: object = {}) => ({
  sessionId: 'err-1',
  endUserId: 'user-e',
  name: 'TypeError',
  message: "Cannot read properties of undefined (reading 'price')",
  stack: CHROME,
  url: 'https://shop.example/cart?step=2',
  timestampMs: Date.now() - 60_000,
  release: 'web@1.0.0',
  ...extra,
})

describe('POST /api/ingestion/errors', () => {
  test('a report becomes an occurrence of a new open Issue; the answer names the Issue', async () => {
    const timestampMs = Date.now() - 120_000
    const answer = await send(report({ timestampMs, level: 'fatal', handled: false, context: { route: '/cart' } }))
    expect(answer).toEqual({ success: true, accepted: 1, issues: [expect.stringMatching(/^[0-9a-f-]{36}$/)] })
    const [issueId] = answer.issues
    expect(await issue(issueId)).toEqual({
      status: 'open',
      is_regression: false,
      occurrences: 1,
      affected_users: 1,
      title: "TypeError: Cannot read properties of undefined (reading 'price')",
      culprit: 'renderTotal (assets/cart.js)',
      level: 'fatal',
      first_release: 'web@1.0.0',
      last_release: 'web@1.0.0',
      first: String(timestampMs),
      last: String(timestampMs),
      resolved: false,
    })
    const [occurrence] = await rows<Record<string, unknown>>(sql`
      select session_id, end_user_id, url, level, handled, release, context, frames, (extract(epoch from timestamp) * 1000)::bigint::text as ts
      from error_events where issue_id = ${issueId}`)
    expect(occurrence).toMatchObject({
      session_id: 'err-1',
      end_user_id: 'user-e',
      url: 'https://shop.example/cart?step=2',
      level: 'fatal',
      handled: false,
      release: 'web@1.0.0',
      context: { route: '/cart' },
      ts: String(timestampMs),
    })
    expect((occurrence.frames as { function: string; lineno: number | null; inApp: boolean }[]).map((f): unknown[] => [f.function, f.lineno, f.inApp])).toEqual([
      ['CartView.renderTotal', 41, true],
      ['', 12, true],
      ['Array.forEach', null, false],
      ['render', 11, true],
    ])
    expect(await rows(sql`select 1 from sessions where session_id = 'err-1' and end_user_id = 'user-e'`)).toHaveLength(1)
  })

  test('the same bug from Chrome, Firefox and Safari, and from another release, is one Issue', async () => {
    const answer = await send({
      sessionId: 'err-2',
      endUserId: 'user-f',
      errors: [
        report({ sessionId: undefined, endUserId: undefined, stack: FIREFOX, message: "can't access property \"price\", item is undefined", timestampMs: Date.now() - 50_000 }),
        report({ sessionId: undefined, stack: SAFARI, message: "undefined is not an object (evaluating 'item.price')", release: 'web@1.0.1', timestampMs: Date.now() - 40_000 }),
        report({ sessionId: 'err-3', stack: CHROME }),
      ],
    })
    expect(answer.accepted).toBe(3)
    const [chromeIssue] = (await send(report())).issues
    expect(answer.issues).toEqual([chromeIssue, chromeIssue, chromeIssue])
    const stored = await issue(chromeIssue)
    expect(stored.first_release).toBe('web@1.0.0')
    expect(stored.last_release).toBe('web@1.0.1')
    expect(await rows(sql`select session_id, end_user_id from error_events where issue_id = ${chromeIssue} and session_id <> 'err-1' order by session_id, timestamp`)).toEqual([
      { session_id: 'err-2', end_user_id: 'user-f' },
      { session_id: 'err-2', end_user_id: 'user-e' },
      { session_id: 'err-3', end_user_id: 'user-e' },
    ])
  })

  test('another function or another kind of error is another Issue', async () => {
    const [base] = (await send(report({ sessionId: 'err-4' }))).issues
    const [otherFunction] = (await send(report({ sessionId: 'err-4', stack: CHROME.replace('renderTotal', 'renderTax') }))).issues
    const [otherName] = (await send(report({ sessionId: 'err-4', name: 'RangeError' }))).issues
    expect(new Set([base, otherFunction, otherName]).size).toBe(3)
  })

  test('a resend is stored and counted once and answers the same Issue; a client uuid identifies the occurrence', async () => {
    const body = report({ sessionId: 'err-5', endUserId: 'user-r', timestampMs: 1_700_000_000_123 })
    const [issueId] = (await send(body)).issues
    const before = await issue(issueId)
    for (let i = 0; i < 3; i++) expect((await send(body)).issues).toEqual([issueId])
    expect(await issue(issueId)).toEqual(before)

    const uuid = '0190a4b4-5555-7000-8000-000000000001'
    await send(report({ sessionId: 'err-5', uuid, message: 'first words' }))
    await send(report({ sessionId: 'err-5', uuid, message: 'the same occurrence, resent with other words' }))
    expect(await rows(sql`select message from error_events where content_hash = ${uuid}`)).toEqual([{ message: 'first words' }])
  })

  test('the same error twice in one millisecond (from a loop) is two occurrences; a resend of the batch adds none', async () => {
    const occurrence = report({ sessionId: 'err-twice', timestampMs: 1_700_000_000_456, fingerprint: ['loop'] })
    const twice = { sessionId: 'err-twice', errors: [occurrence, occurrence] }
    const [issueId] = (await send(twice)).issues
    expect((await send(twice)).accepted).toBe(2)
    expect(await rows(sql`select 1 from error_events where session_id = 'err-twice'`)).toHaveLength(2)
    expect((await issue(issueId)).occurrences).toBe(2)
  })

  test('an error name of any length is stored cut to 1 KB, not refused with its batch', async () => {
    const answer = await send({ sessionId: 'err-long', errors: [report({ sessionId: 'err-long', name: 'E'.repeat(5000) }), report({ sessionId: 'err-long' })] })
    expect(answer.accepted).toBe(2)
    const names = await rows<{ name: string }>(sql`select name from error_events where session_id = 'err-long' order by length(name)`)
    expect(names.map(({ name }) => [name.slice(0, 3), Buffer.byteLength(name)])).toEqual([['Typ', 9], ['EEE', 1024]])
  })

  test('without a stack: the masked message groups; with a fingerprint of the client: that groups', async () => {
    const bare = (message: string, extra: object = {}) => report({ sessionId: 'err-6', stack: undefined, message, ...extra })
    const [a] = (await send(bare('Request 4411 to https://api.example/orders/4411 failed'))).issues
    const [b] = (await send(bare('Request 9 to https://api.example/orders/9?x=1 failed'))).issues
    const [c] = (await send(bare('Payment 9 declined'))).issues
    expect(a).toBe(b)
    expect(c).not.toBe(a)
    const [d] = (await send(bare('one', { fingerprint: ['payments', 'declined'] }))).issues
    const [e] = (await send(bare('two', { fingerprint: ['payments', 'declined'], stack: FIREFOX }))).issues
    expect(d).toBe(e)
    expect(d).not.toBe(c)
  })

  test('ready frames are taken as they are, with in-app hints', async () => {
    const frames = [
      { filename: 'https://shop.example/assets/vendor.js', function: 'dispatch', lineno: 10, colno: 5, inApp: false },
      { filename: 'https://shop.example/assets/app.js', function: 'onPay', lineno: 3, colno: 7 },
    ]
    const [withFrames] = (await send(report({ sessionId: 'err-7', stack: undefined, frames }))).issues
    const [sameTopAppFrame] = (await send(report({ sessionId: 'err-7', stack: '    at onPay (https://shop.example/assets/app.js:3:7)' }))).issues
    expect(withFrames).toBe(sameTopAppFrame)
    const [stored] = await rows<{ frames: { filename: string; inApp: boolean }[] }>(sql`select frames from error_events where session_id = 'err-7' and stack is null`)
    expect(stored.frames.map((f) => f.inApp)).toEqual([false, true])
  })

  test('fields WIRE.md does not define never cost a report or its batch: a malformed one is ignored, a uuid without dashes is the same uuid', async () => {
    const uuid = '9f2c1b7e-4a3d-4c2b-8e1f-0a9b8c7d6e5f'
    const vendor = 'https://shop.example/node_modules/pay-sdk/index.js'
    const batch = {
      sessionId: 'err-ext',
      errors: [
        report({ sessionId: 'err-ext', uuid: uuid.replaceAll('-', '').toUpperCase(), message: 'as Sentry writes its ids' }),
        report({ sessionId: 'err-ext', stack: undefined, message: 'with odd hints', frames: [{ filename: vendor, function: 'charge', lineno: 1, colno: 2, inApp: 'yes', debugId: 'f'.repeat(65) }] }),
        report({ sessionId: 'err-ext', message: 'with odd debug ids', debugIds: { 'https://shop.example/assets/cart.3f2a1b9c.js': null, 'https://shop.example/a.js': 'x'.repeat(80) } }),
        report({ sessionId: 'err-ext', message: 'with an id that is no UUID', uuid: 'occurrence-17', debugIds: ['not', 'an', 'object'] }),
      ],
    }
    expect((await send(batch)).accepted).toBe(4)
    expect((await send(batch)).accepted).toBe(4)
    // The dashed form of the id is a resend of the same occurrence.
    await send(report({ sessionId: 'err-ext', uuid, message: 'resent with dashes' }))
    const stored = await rows<{ message: string; content_hash: string; frames: { inApp: boolean; debugId: string | null }[] }>(
      sql`select message, content_hash, frames from error_events where session_id = 'err-ext' order by message`,
    )
    expect(stored.map((r) => r.message)).toEqual(['as Sentry writes its ids', 'with an id that is no UUID', 'with odd debug ids', 'with odd hints'])
    expect(stored[0].content_hash).toBe(uuid)
    // The hint that is no boolean leaves it to the file (a dependency's), the debug id that is none is dropped.
    expect(stored[3].frames).toEqual([expect.objectContaining({ filename: vendor, inApp: false, debugId: null })])
  })

  test('one report with a field of its own named `errors` (an AggregateError spread into it) is that report, not a batch', async () => {
    // `{...aggregateError}` copies its own `errors`: the errors it gathers, objects that JSON writes as `{}`.
    const aggregate = report({ sessionId: 'err-aggregate', name: 'AggregateError', message: 'All promises were rejected', errors: [{}, {}] })
    const answer = await send(aggregate)
    expect(answer).toEqual({ success: true, accepted: 1, issues: [expect.any(String)] })
    expect(await rows(sql`select name, message from error_events where session_id = 'err-aggregate'`)).toEqual([{ name: 'AggregateError', message: 'All promises were rejected' }])
    // A batch is still a batch.
    expect((await send({ sessionId: 'err-aggregate', errors: [aggregate, report({ sessionId: undefined, message: 'another' })] })).accepted).toBe(2)
  })

  test('a valid batch that also carries the fields of a report at its top level is a batch: its reports are not dropped', async () => {
    const batch = {
      ...report({ sessionId: 'err-both', message: 'fields beside the batch' }),
      errors: [report({ sessionId: undefined, message: 'first of the batch' }), report({ sessionId: undefined, message: 'second of the batch' })],
    }
    expect((await send(batch)).accepted).toBe(2)
    expect(await rows(sql`select message from error_events where session_id = 'err-both' order by message`)).toEqual([
      { message: 'first of the batch' },
      { message: 'second of the batch' },
    ])
  })

  test('null in every optional field is taken as absent, `level` included; a report of a batch with a null session takes the batch\'s', async () => {
    const nulls = {
      endUserId: null,
      stack: null,
      frames: null,
      url: null,
      release: null,
      level: null,
      handled: null,
      fingerprint: null,
      context: null,
      uuid: null,
      debugIds: null,
    }
    const single = await send({ ...report({ sessionId: 'err-null', message: 'single' }), ...nulls })
    const batch = await send({ sessionId: 'err-null', endUserId: null, errors: [{ ...report({ message: 'batched' }), ...nulls, sessionId: null }] })
    expect([single.accepted, batch.accepted]).toEqual([1, 1])
    // A null endUserId is none named: both reports are their session's end user's, made by the first
    // and answered (WIRE.md, Ids; see session-end-user-observability.test.ts).
    const endUserIds = [single, batch].map((answer) => (answer as { endUserId?: string }).endUserId)
    expect(endUserIds).toEqual([expect.any(String), endUserIds[0]])
    const stored = await rows(sql`select message, level, end_user_id, handled, release, url from error_events where session_id = 'err-null' order by message`)
    expect(stored).toEqual(['batched', 'single'].map((message) => ({ message, level: 'error', end_user_id: endUserIds[0], handled: null, release: null, url: null })))
    expect((await issue(single.issues[0])).level).toBe('error')
  })

  test('an empty release is no release: the report is stored without one, its batch with it', async () => {
    // A page whose release comes from an unset variable sends "" (`release: process.env.RELEASE ?? ''`).
    const answer = await send({ sessionId: 'err-empty-release', errors: [report({ sessionId: undefined, message: 'empty release', release: '' }), report({ sessionId: undefined, message: 'with release' })] })
    expect(answer.accepted).toBe(2)
    const stored = await rows(sql`select message, release from error_events where session_id = 'err-empty-release' order by message`)
    expect(stored).toEqual([
      { message: 'empty release', release: null },
      { message: 'with release', release: 'web@1.0.0' },
    ])
  })

  test('a resolved Issue that recurs is reopened as a regression; an old resend does not reopen it; ignored stays ignored', async () => {
    const body = report({ sessionId: 'err-8', stack: CHROME.replaceAll('renderTotal', 'renderShipping'), timestampMs: Date.now() - 10_000 })
    const [issueId] = (await send(body)).issues
    expect(await setIssueStatus(core.database.db, core.project.projectId, issueId, 'resolved')).toBe(true)
    expect(await issue(issueId)).toMatchObject({ status: 'resolved', resolved: true, is_regression: false })

    await send(body)
    expect(await issue(issueId)).toMatchObject({ status: 'resolved', occurrences: 1 })

    await send({ ...body, timestampMs: Date.now() })
    expect(await issue(issueId)).toMatchObject({ status: 'open', is_regression: true, resolved: false, occurrences: 2 })

    await setIssueStatus(core.database.db, core.project.projectId, issueId, 'ignored')
    await send({ ...body, timestampMs: Date.now() + 1 })
    expect(await issue(issueId)).toMatchObject({ status: 'ignored', occurrences: 3 })
    expect(await setIssueStatus(core.database.db, core.project.projectId, '00000000-0000-4000-8000-000000000000', 'resolved')).toBe(false)
  })

  test('an occurrence from before the Issue was resolved, delivered late (an outbox drained), is counted without reopening it', async () => {
    const body = report({ sessionId: 'err-8b', stack: CHROME.replaceAll('renderTotal', 'renderGiftCard'), timestampMs: Date.now() - 20_000 })
    const [issueId] = (await send(body)).issues
    expect(await setIssueStatus(core.database.db, core.project.projectId, issueId, 'resolved')).toBe(true)

    // Another occurrence (not a resend), made before the resolution and sent only now.
    await send({ ...body, timestampMs: Date.now() - 10_000 })
    expect(await issue(issueId)).toMatchObject({ status: 'resolved', resolved: true, is_regression: false, occurrences: 2 })

    await Bun.sleep(5)
    await send({ ...body, timestampMs: Date.now() })
    expect(await issue(issueId)).toMatchObject({ status: 'open', resolved: false, is_regression: true, occurrences: 3 })
  })

  // A browser's clock is off by `skewMs`: its replay, sent as it records, shows by how much.
  const skewedSession = async (sessionId: string, skewMs: number) => {
    const at = Date.now() + skewMs
    const events = [
      { type: 4, timestamp: at - 2_000, data: { href: 'https://shop.example/cart', width: 1280, height: 720 } },
      { type: 3, timestamp: at - 100, data: { source: 1, positions: [{ x: 1, y: 1, id: 1, timeOffset: 0 }] } },
    ]
    expect((await core.post('/api/ingestion/events', { sessionId, windowId: 'w', seq: 0, events })).status).toBe(200)
  }
  const resolvedAt = async (issueId: string) =>
    Number((await rows<{ ms: string }>(sql`select (extract(epoch from resolved_at) * 1000)::bigint::text as ms from issues where issue_id = ${issueId}`))[0].ms)

  test.each([
    ['behind', -2 * 60 * 60_000],
    ['ahead', 2 * 60 * 60_000],
  ])('a browser whose clock runs %s: what it made before the resolution only counts, what it made after reopens the Issue', async (_, skewMs) => {
    const sessionId = `err-skew-${skewMs}`
    await skewedSession(sessionId, skewMs)
    const body = report({ sessionId, stack: CHROME.replaceAll('renderTotal', `renderSkew${skewMs < 0 ? 'Behind' : 'Ahead'}`), timestampMs: Date.now() + skewMs - 30_000 })
    const [issueId] = (await send(body)).issues
    await Bun.sleep(5)
    expect(await setIssueStatus(core.database.db, core.project.projectId, issueId, 'resolved')).toBe(true)
    const resolved = await resolvedAt(issueId)
    await Bun.sleep(5)

    // Made (by the real clock) 5 s before the resolution, sent only now.
    await send({ ...body, timestampMs: resolved - 5_000 + skewMs })
    expect(await issue(issueId)).toMatchObject({ status: 'resolved', resolved: true, is_regression: false, occurrences: 2 })

    // Made now, after the resolution.
    await send({ ...body, timestampMs: Date.now() + skewMs })
    expect(await issue(issueId)).toMatchObject({ status: 'open', resolved: false, is_regression: true, occurrences: 3 })
  })

  test('a report received before the resolution and committed after it does not reopen the Issue, whatever time its clock says', async () => {
    const caller = { projectId: core.project.projectId, environment: 'development', monthlyLimit: null }
    const body = { sessionId: 'err-queued', errors: [report({ sessionId: 'err-queued', stack: CHROME.replaceAll('renderTotal', 'renderQueued'), timestampMs: Date.now() - 30_000 })] }
    const [issueId] = (await send(body)).issues
    // Received now (waiting in the writer's queue), by a browser whose clock runs an hour ahead.
    const late = { ...body, errors: [{ ...body.errors[0], timestampMs: Date.now() + 60 * 60_000 }] }
    const queued = errorRows(late, late.errors.map((r) => symbolicate(reportedFrames(r), () => undefined)), caller, Date.now())
    await Bun.sleep(5)
    expect(await setIssueStatus(core.database.db, core.project.projectId, issueId, 'resolved')).toBe(true)
    await core.database.db.orm.transaction((tx) => errorEventsSink.write(tx, queued.occurrences))
    expect(await issue(issueId)).toMatchObject({ status: 'resolved', resolved: true, is_regression: false, occurrences: 2 })
  })

  test('affected end users stay exact when occurrences commit concurrently through two cores', async () => {
    const second = await startCore({ database: core.database })
    try {
      const stack = CHROME.replaceAll('renderTotal', 'renderCoupon')
      const users = ['u-1', 'u-2', 'u-3', 'u-4', 'u-5']
      // Each session has its end user before the burst: a report naming none is then that one's.
      // Without it, such a report committing before any naming its session's would make a person.
      for (let k = 0; k < 7; k++) {
        const res = await core.post('/api/ingestion/customEvent', { sessionId: `err-9-${k}`, endUserId: users[k % users.length], eventName: 'seen' }, { key: core.key })
        expect(res.status).toBe(200)
      }
      const bodies = Array.from({ length: 40 }, (_, i) =>
        report({ sessionId: `err-9-${i % 7}`, endUserId: i % 8 === 7 ? null : users[i % users.length], stack, timestampMs: 1_700_000_000_000 + i }),
      )
      // The second core serves the same project (with its key) on the same database.
      const answers = await Promise.all(bodies.map((body, i) => (i % 2 ? second : core).post('/api/ingestion/errors', body, { key: core.key })))
      expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200))
      const issueId = ((await answers[0].json()) as { issues: string[] }).issues[0]
      expect(await issue(issueId)).toMatchObject({ occurrences: 40, affected_users: 5, first: '1700000000000', last: '1700000000039' })
    } finally {
      await second.close()
    }
  })

  test('step by step: two commits of one Issue overlap, each adding a user; both users and both occurrences count', async () => {
    // The second commit runs while the first holds its rows uncommitted, as two processes' commits can.
    const caller = { projectId: core.project.projectId, environment: 'development', monthlyLimit: null }
    const rowsFor = (endUserId: string, timestampMs: number) => {
      const body = { sessionId: 'err-11', errors: [report({ sessionId: 'err-11', endUserId, timestampMs, stack: CHROME.replaceAll('renderTotal', 'renderGift') })] }
      return errorRows(body, body.errors.map((r) => symbolicate(reportedFrames(r), () => undefined)), caller, Date.now()).occurrences
    }
    let commitFirst!: () => void
    const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve))
    let firstReady!: () => void
    const firstAtCommit = new Promise<void>((resolve) => (firstReady = resolve))
    const first = core.database.db.orm.transaction(async (tx) => {
      await errorEventsSink.write(tx, rowsFor('gift-a', 1_700_000_000_001))
      firstReady()
      await firstMayCommit
    })
    await firstAtCommit
    const second = core.database.db.orm.transaction((tx) => errorEventsSink.write(tx, rowsFor('gift-b', 1_700_000_000_002)))
    await Bun.sleep(150)
    commitFirst()
    await Promise.all([first, second])
    expect(await issue(rowsFor('gift-a', 0)[0].issueId)).toMatchObject({ occurrences: 2, affected_users: 2 })
  })

  test('many commits creating the same new Issue at once all store it: one Issue, every occurrence and user counted', async () => {
    // Each round is a fingerprint never seen, so every commit of it may be the one that creates the Issue.
    const caller = { projectId: core.project.projectId, environment: 'development', monthlyLimit: null }
    for (let round = 0; round < 100; round++) {
      const stack = CHROME.replaceAll('renderTotal', `renderRace${round}`)
      const commits = Array.from({ length: 6 }, (_, i) => {
        const body = { sessionId: 'err-12', errors: [report({ sessionId: 'err-12', endUserId: `race-${i}`, timestampMs: 1_700_000_000_000 + i, stack })] }
        const { occurrences } = errorRows(body, body.errors.map((r) => symbolicate(reportedFrames(r), () => undefined)), caller, Date.now())
        return core.database.db.orm.transaction((tx) => errorEventsSink.write(tx, occurrences)).then(() => occurrences[0].issueId)
      })
      const [issueId] = await Promise.all(commits)
      expect(await issue(issueId)).toMatchObject({ occurrences: 6, affected_users: 6 })
    }
  })

  test.each([
    [{ ...report(), sessionId: undefined }, '/sessionId'],
    [{ ...report(), name: undefined }, '/name'],
    [{ ...report(), message: 5 }, '/message'],
    [{ ...report(), timestampMs: 'now' }, '/timestampMs'],
    [{ ...report(), level: 'info' }, '/level'],
    [{ ...report(), handled: 'yes' }, '/handled'],
    [{ ...report(), fingerprint: 'abc' }, '/fingerprint'],
    [{ ...report(), fingerprint: [''] }, '/fingerprint/0'],
    [{ ...report(), frames: [{ function: 'x' }] }, '/frames/0/filename'],
    [{ ...report(), frames: [{ filename: 'a.js', lineno: -1 }] }, '/frames/0/lineno'],
    [{ ...report(), release: 'web\n1.0' }, '/release'],
    [{ ...report(), release: 'r'.repeat(257) }, '/release'],
    [{ ...report(), context: [1] }, '/context'],
    [{ sessionId: 's', errors: [] }, '/errors'],
    [{ sessionId: 's', errors: [report(), { ...report(), message: undefined }] }, '/errors/1/message'],
    ['"a string"', '/'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await core.post('/api/ingestion/errors', body)
    expect(res.status).toBe(400)
    const answer = await res.json()
    expect(answer).toMatchObject({ success: false, error: { code: 'validation_failed' }, path })
    expect(typeof answer.error.message).toBe('string')
  })

  test('not JSON, a revoked key, wrong method; a refused report stores nothing', async () => {
    const broken = await core.post('/api/ingestion/errors', '{"name": "TypeError",')
    expect(broken.status).toBe(400)
    expect(await broken.json()).toMatchObject({ error: { code: 'invalid_json' } })
    const wrong = await core.post('/api/ingestion/errors', report(), { key: 'sl_dev_unknown' })
    expect(wrong.status).toBe(401)
    expect((await core.request('/api/ingestion/errors', { method: 'PUT' })).status).toBe(405)
    await core.post('/api/ingestion/errors', { sessionId: 'err-10', errors: [report({ sessionId: 'err-10' }), { ...report(), level: 'nope' }] })
    expect(await rows(sql`select 1 from error_events where session_id = 'err-10'`)).toEqual([])
  })
})
