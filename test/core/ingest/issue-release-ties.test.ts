import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, startCoreBeside, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

// Two reports of one Issue made in the same millisecond under two releases: which release is the
// Issue's first (and last) must not depend on which commit (of which core) came first, nor on the
// order a batch lists them in. At a tie the first release is the lower by text, the last the higher.

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const releases = async (issueId: string) =>
  (await core.database.db.rows<{ first_release: string; last_release: string }>(sql`select first_release, last_release from issues where issue_id = ${issueId}`))[0]
const send = async (body: object, through: TestCore = core) => {
  const res = await through.post('/api/ingestion/errors', body, { key: core.key })
  expect(res.status).toBe(200)
  return ((await res.json()) as { issues: string[] }).issues[0]
}
/** A report of the Issue of `fn` in a session of its own (a report's session is part of what tells a resend). */
const report = (fn: string, release: string, at: number) => ({
  sessionId: `tie-${fn}-${release}`,
  endUserId: 'u-tie',
  name: 'TypeError',
  message: 'total is undefined',
  stack: `TypeError: total is undefined\n    at ${fn} (https://shop.example/assets/app.js:41:23)`,
  timestampMs: at,
  release,
})

describe('first and last release at a tie of times', () => {
  test('two commits, in either order: the lower release by text is first, the higher last', async () => {
    const at = Date.now() - 60_000
    const ascending = await send(report('renderTieA', '1.0.0', at))
    await send(report('renderTieA', '2.0.0', at))
    const descending = await send(report('renderTieB', '2.0.0', at))
    await send(report('renderTieB', '1.0.0', at))
    expect(await releases(ascending)).toEqual({ first_release: '1.0.0', last_release: '2.0.0' })
    expect(await releases(descending)).toEqual({ first_release: '1.0.0', last_release: '2.0.0' })
  })

  test('one batch, in either order', async () => {
    const at = Date.now() - 50_000
    const batch = (fn: string, order: string[]) => ({ sessionId: `tie-batch-${fn}`, errors: order.map((release) => ({ ...report(fn, release, at), sessionId: undefined, message: `total is undefined ${release}` })) })
    const ascending = await send(batch('renderTieC', ['1.0.0', '2.0.0']))
    const descending = await send(batch('renderTieD', ['2.0.0', '1.0.0']))
    expect(await releases(ascending)).toEqual({ first_release: '1.0.0', last_release: '2.0.0' })
    expect(await releases(descending)).toEqual({ first_release: '1.0.0', last_release: '2.0.0' })
  })

  test('a tie with a stored release between two others of a later commit', async () => {
    const at = Date.now() - 40_000
    const issueId = await send(report('renderTieE', 'b', at))
    await send({ sessionId: 'tie-E-batch', errors: ['c', 'a'].map((release) => ({ ...report('renderTieE', release, at), sessionId: undefined, message: `m ${release}` })) })
    expect(await releases(issueId)).toEqual({ first_release: 'a', last_release: 'c' })
  })

  test.skipIf(engine !== 'postgres')('two cores committing at once: the same first and last release every time', async () => {
    const second = await startCoreBeside(core)
    try {
      const at = Date.now() - 30_000
      for (let round = 0; round < 10; round++) {
        const fn = `renderTieRace${round}`
        const order = round % 2 ? ['2.0.0', '1.0.0'] : ['1.0.0', '2.0.0']
        const [issueId] = await Promise.all(order.map((release, i) => send(report(fn, release, at), i ? second : core)))
        expect(await releases(issueId)).toEqual({ first_release: '1.0.0', last_release: '2.0.0' })
      }
    } finally {
      await second.close()
    }
  })
})

describe("title and level, the latest occurrence's, at a tie of times", () => {
  const described = async (issueId: string) =>
    (await core.database.db.rows<{ title: string; level: string }>(sql`select title, level from issues where issue_id = ${issueId}`))[0]
  const tied = (fn: string, message: string, level: string, at: number) => ({ ...report(fn, '1.0.0', at), sessionId: `tie-${fn}-${message.split(' ')[0]}`, message, level })

  test('two commits, in either order: the higher by text', async () => {
    const at = Date.now() - 20_000
    const ascending = await send(tied('renderTieF', 'a is undefined', 'error', at))
    await send(tied('renderTieF', 'b is undefined', 'warning', at))
    const descending = await send(tied('renderTieG', 'b is undefined', 'warning', at))
    await send(tied('renderTieG', 'a is undefined', 'error', at))
    for (const issueId of [ascending, descending]) expect(await described(issueId)).toEqual({ title: 'TypeError: b is undefined', level: 'warning' })
  })

  test('one batch, in either order; a later occurrence still wins whatever its text', async () => {
    const at = Date.now() - 10_000
    const batch = (fn: string, messages: string[]) => ({ sessionId: `tie-batch-${fn}`, errors: messages.map((m) => ({ ...tied(fn, m, 'error', at), sessionId: undefined })) })
    const ascending = await send(batch('renderTieH', ['a is undefined', 'b is undefined']))
    const descending = await send(batch('renderTieI', ['b is undefined', 'a is undefined']))
    for (const issueId of [ascending, descending]) expect((await described(issueId)).title).toBe('TypeError: b is undefined')
    await send(tied('renderTieH', 'a is undefined', 'error', at + 1))
    expect((await described(ascending)).title).toBe('TypeError: a is undefined')
  })
})
