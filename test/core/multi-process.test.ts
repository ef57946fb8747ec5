import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createQuota } from '@sightline/core/ingest/quota'
import { monthOf } from '@sightline/core/ingest/quota/service'
import { createProject } from '@sightline/core/projects/service'
import type { WriteRequest } from '@sightline/core/writer'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { spawnCore, type CoreProcess } from '../helpers/process'

// Operators scale core out by running several processes on one Postgres behind a load balancer. Here
// two real core processes share one database and the same requests race through both: what the
// tables hold afterwards must be what one process would have stored. Postgres only (an embedded
// database belongs to one process).

let database: TestDatabase
let cores: CoreProcess[] = []
let key = ''
let limitedKey = ''
const LIMIT = 40

beforeAll(async () => {
  if (engine !== 'postgres') return
  database = await createTestDatabase()
  key = (await createProject(database.db.orm, { name: 'shared' })).keys.production
  limitedKey = (await createProject(database.db.orm, { name: 'limited', monthlyLimit: LIMIT })).keys.production
  cores = await Promise.all([spawnCore({ DATABASE_URL: database.url! }), spawnCore({ DATABASE_URL: database.url! })])
})
afterAll(async () => {
  await Promise.all(cores.map((core) => core.stop()))
  await database?.close()
})

const post = async (core: CoreProcess, path: string, body: object, useKey = key) => {
  const res = await fetch(`${core.url}/api/ingestion${path}`, { method: 'POST', headers: { authorization: `Bearer ${useKey}` }, body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}
/** Sends each body through both processes at once: the first to one, the second to the other, and so on. */
const spread = (path: string, bodies: object[], useKey = key) => Promise.all(bodies.map((body, i) => post(cores[i % 2], path, body, useKey)))
const rows = <T = Record<string, unknown>>(query: ReturnType<typeof sql>) => database.db.rows<T>(query)
const uuid = (run: number, n: number) => `0190a4b4-0000-7000-8000-${String(run * 1000 + n).padStart(12, '0')}`

describe.skipIf(engine !== 'postgres')('the monthly limit, held by two processes together', () => {
  test('single items, batches that straddle the limit and resends near it: stored while under, counted once, then 429 and nothing stored', async () => {
    // 30 single events; then 8 of them resent through the other process (a retry the load balancer
    // sent elsewhere) at once with 2 new ones: stored once, counted once.
    const singles = Array.from({ length: 32 }, (_, i) => ({ sessionId: `q-${i % 3}`, eventName: 'single', uuid: uuid(1, i) }))
    const first = await spread('/customEvent', singles.slice(0, 30), limitedKey)
    expect(first.map((a) => a.status)).toEqual(first.map(() => 200))
    const resent = await spread('/customEvent', [...singles.slice(30), ...singles.slice(1, 9)], limitedKey)
    expect(resent.map((a) => a.status)).toEqual(resent.map(() => 200))
    expect(await usage()).toBe(32)

    // Batches of 4 new events at once through both: each is admitted while the usage before it is
    // under the limit, so the limit is passed by less than one batch.
    const batches = Array.from({ length: 12 }, (_, b) => ({ sessionId: 'q-b', events: [0, 1, 2, 3].map((j) => ({ eventName: 'batched', uuid: uuid(2, b * 4 + j) })) }))
    const batchAnswers = await spread('/customEvent/batch', batches, limitedKey)
    const admitted = batches.filter((_, b) => batchAnswers[b].status === 200)
    for (const answer of batchAnswers.filter((a) => a.status !== 200)) {
      expect(answer).toEqual({ status: 429, body: { success: false, error: { code: 'monthly_limit_reached', message: expect.any(String) }, monthlyLimitReached: true } })
    }
    const stored = await storedUuids()
    expect(stored.size).toBeGreaterThanOrEqual(LIMIT)
    expect(stored.size).toBeLessThanOrEqual(LIMIT + 3)
    expect(stored.size).toBe(32 + admitted.length * 4)
    expect(admitted.flatMap((b) => b.events.map((e) => e.uuid)).filter((id) => !stored.has(id))).toEqual([])
    expect(await usage()).toBe(stored.size)
    expect(await rows(sql`select uuid from events group by uuid having count(*) > 1`)).toEqual([])

    // Over the limit: every process refuses new items and resends alike, and stores nothing.
    const over = await spread('/customEvent', [singles[0], { sessionId: 'q-over', eventName: 'over' }, singles[1], { sessionId: 'q-over', eventName: 'over' }], limitedKey)
    expect(over.map((a) => a.status)).toEqual([429, 429, 429, 429])
    expect((await storedUuids()).size).toBe(stored.size)
  })

  async function usage() {
    return Number((await rows<{ n: string }>(sql`select coalesce(sum(u.events), 0)::text as n from usage_counters u join projects p using (project_id) where p.name = 'limited'`))[0].n)
  }
  async function storedUuids() {
    const found = await rows<{ id: string }>(sql`select e.uuid::text as id from events e join projects p using (project_id) where p.name = 'limited'`)
    return new Set(found.map((r) => r.id))
  }
})

describe.skipIf(engine !== 'postgres')('the monthly limit, step by step', () => {
  // Two commits of a limited project in two processes: the second waits on the counter the first
  // holds. Once the first commits, the second must count what the first added, wherever it added it
  // (a counter row the second could not see when it began to wait is one it would not lock or read).
  test('a commit that waited on the counter sees what the one before it counted', async () => {
    for (let round = 0; round < 3; round++) {
      const project = await createProject(database.db.orm, { name: `steps-${round}`, monthlyLimit: 1 })
      const month = monthOf(Date.now())
      // Not the month's first commit: its counter row exists already.
      await rows(sql`insert into usage_counters (project_id, month, shard, events) values (${project.projectId}, ${month}, 0, 0)`)
      const request: WriteRequest = { projectId: project.projectId, monthlyLimit: 1, items: 1, bytes: 0, writes: [] }
      const [one, other] = [createQuota(), createQuota()]

      let commitFirst!: () => void
      const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve))
      let firstReady!: () => void
      const firstCounted = new Promise<void>((resolve) => (firstReady = resolve))
      const first = database.db.transaction(async (tx) => {
        const decision = await one.gate.admit(tx, [request])
        await decision.record?.(tx)
        firstReady()
        await firstMayCommit
        return decision.verdicts
      })
      await firstCounted
      const second = database.db.transaction(async (tx) => {
        const decision = await other.gate.admit(tx, [request])
        await decision.record?.(tx)
        return decision.verdicts
      })
      await waitUntilBlocked()
      commitFirst()
      expect((await first)[0]).toBeNull()
      expect((await second)[0]?.code).toBe('monthly_limit_reached')
      expect(await rows(sql`select sum(events)::int as n from usage_counters where project_id = ${project.projectId}`)).toEqual([{ n: 1 }])
    }
  })

  async function waitUntilBlocked() {
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline) {
      const waiting = await rows(sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
      if (waiting.length > 0) return
      await Bun.sleep(10)
    }
    throw new Error('the second commit never waited on the first')
  }
})

const t0 = Date.now() - 60_000
const meta = (timestamp: number, href: string) => ({ type: 4, timestamp, data: { href, width: 1280, height: 720 } })
const move = (timestamp: number, x: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x, y: 10, id: 1, timeOffset: 0 }] } })

describe.skipIf(engine !== 'postgres')('first requests of a new session through both processes at once', () => {
  test('one session and one end user each, with the earliest page as entry, whatever order the chunks commit in', async () => {
    const sessions = Array.from({ length: 8 }, (_, i) => `new-${i}`)
    const answers = await Promise.all(
      sessions.flatMap((sessionId, i) => {
        const endUserId = `person-${i}`
        // Page 2's chunk and page 1's (sent late: it waited offline) race through the two processes,
        // with an event and an identify naming the same new end user.
        const page = (n: number, at: number, referrer: string) => ({ sessionId, endUserId, windowId: 'w', seq: n, events: [meta(at, `https://race.test/page-${n}`), move(at + 10, n)], automaticProperties: { referrer, language: 'en' } })
        return [
          post(cores[i % 2], '/events', page(2, t0 + 5_000, 'https://race.test/page-1')),
          post(cores[(i + 1) % 2], '/events', page(1, t0 + 1_000, 'https://search.test/')),
          post(cores[i % 2], '/customEvent', { sessionId, endUserId, eventName: 'opened', timestamp: t0 + 9_000 }),
          post(cores[(i + 1) % 2], '/user', { sessionId, userId: endUserId, userAttributes: { plan: i % 2 ? 'pro' : 'free' } }),
        ]
      }),
    )
    expect(answers.filter((a) => a.status !== 200)).toEqual([])
    const stored = await rows<Record<string, unknown>>(sql`
      select session_id, end_user_id, entry_url, referrer, (extract(epoch from started_at) * 1000)::bigint::text as started_ms,
        (extract(epoch from last_activity_at) * 1000)::bigint::text as last_ms, window_ids, automatic_properties
      from sessions where session_id like 'new-%' order by session_id`)
    expect(stored).toEqual(
      sessions.map((sessionId, i) => ({
        session_id: sessionId,
        end_user_id: `person-${i}`,
        entry_url: 'https://race.test/page-1',
        referrer: 'https://search.test/',
        started_ms: String(t0 + 1_000),
        // The identify is activity too, at the time it was received.
        last_ms: expect.stringMatching(/^\d+$/),
        window_ids: ['w'],
        automatic_properties: { referrer: expect.any(String), language: 'en' },
      })),
    )
    for (const { last_ms } of stored) expect(Number(last_ms)).toBeWithin(t0 + 9_000, Date.now() + 1)
    const users = await rows<{ end_user_id: string; plan: string }>(sql`select end_user_id, attributes->>'plan' as plan from end_users where end_user_id like 'person-%' order by end_user_id`)
    expect(users).toEqual(sessions.map((_, i) => ({ end_user_id: `person-${i}`, plan: i % 2 ? 'pro' : 'free' })))
    expect(await rows(sql`select session_id, seq from replay_chunks where session_id like 'new-%' group by 1, 2 having count(*) <> 1`)).toEqual([])
    expect(await rows(sql`select count(*)::int as n from replay_chunks where session_id like 'new-%'`)).toEqual([{ n: sessions.length * 2 }])
  })
})

describe.skipIf(engine !== 'postgres')('identity and groups through both processes at once', () => {
  test('devices signing in at once become one person with every attribute; group properties merge and each link is made once', async () => {
    const people = Array.from({ length: 4 }, (_, p) => p)
    const devices = ['laptop', 'phone', 'tablet']
    const answers = await Promise.all(
      people.flatMap((p) =>
        devices.flatMap((device, d) => [
          post(cores[(p + d) % 2], '/user/auth', { userId: `${device}-${p}`, sessionId: `auth-${device}-${p}`, authFields: ['email'], userAttributes: { email: `p${p}@race.test`, [device]: true } }),
          post(cores[(p + d + 1) % 2], '/groupidentify', { endUserId: `${device}-${p}`, groupType: 'company', groupKey: `co-${p % 2}`, groupProperties: { [`${device}-${p}`]: d } }),
          post(cores[(p + d) % 2], '/groupidentify', { endUserId: `${device}-${p}`, groupType: 'company', groupKey: `co-${p % 2}` }),
        ]),
      ),
    )
    expect(answers.filter((a) => a.status !== 200)).toEqual([])
    for (const p of people) {
      const canonical = answers.filter((a) => typeof a.body.endUserId === 'string' && (a.body.endUserId as string).endsWith(`-${p}`)).map((a) => a.body.endUserId as string)
      expect(canonical).toHaveLength(devices.length)
      expect(new Set(canonical).size).toBe(1)
      const [person] = await rows<{ attributes: Record<string, unknown> }>(sql`select attributes from end_users where end_user_id = ${canonical[0]}`)
      expect(person.attributes).toEqual({ email: `p${p}@race.test`, laptop: true, phone: true, tablet: true })
      const aliases = await rows<{ alias_id: string; end_user_id: string }>(sql`select alias_id, end_user_id from end_user_aliases where alias_id like ${`%-${p}`} order by alias_id`)
      expect(aliases.map((a) => a.end_user_id)).toEqual(aliases.map(() => canonical[0]))
      expect(aliases.map((a) => a.alias_id).sort()).toEqual(devices.map((d) => `${d}-${p}`).filter((id) => id !== canonical[0]).sort())
    }
    const groups = await rows<{ group_key: string; properties: Record<string, number> }>(sql`select group_key, properties from groups where group_key like 'co-%' order by group_key`)
    expect(groups).toEqual(
      [0, 1].map((g) => ({ group_key: `co-${g}`, properties: Object.fromEntries(people.filter((p) => p % 2 === g).flatMap((p) => devices.map((device, d) => [`${device}-${p}`, d]))) })),
    )
    expect(await rows(sql`select count(*)::int as n from group_members where group_key like 'co-%'`)).toEqual([{ n: people.length * devices.length }])
  })
})

describe.skipIf(engine !== 'postgres')('the same people written by different kinds of request through both processes at once', () => {
  test('no commit waits on another in a circle: none is retried, and every attribute arrives', async () => {
    // One process is sent events of X and identifies of Y, the other events of Y and identifies of X,
    // at once: a commit that locked the end users of its events in one statement and those it
    // identified in another (or behind the identity lock, which the other then wants) deadlocks here.
    const retriedBefore = cores.map((core) => core.stdout().split('commit retried').length)
    const pairs = Array.from({ length: 6 }, (_, i) => [`circle-${i}-x`, `circle-${i}-y`])
    const rounds = 10
    const identify = (core: CoreProcess, userId: string, round: number) =>
      round % 2
        ? post(core, '/user/auth', { userId, authFields: ['email'], userAttributes: { email: `${userId}@circle.test`, [`r${round}`]: true } })
        : post(core, '/user', { userId, userAttributes: { [`r${round}`]: true } })
    const answers = await Promise.all(
      Array.from({ length: rounds }, (_, round) =>
        pairs.flatMap(([x, y]) => [
          post(cores[0], '/customEvent/batch', { sessionId: `${x}-s`, endUserId: x, events: [{ eventName: 'tick' }] }),
          identify(cores[0], y, round),
          post(cores[1], '/customEvent/batch', { sessionId: `${y}-s`, endUserId: y, events: [{ eventName: 'tick' }] }),
          identify(cores[1], x, round),
        ]),
      ).flat(),
    )
    expect(answers.filter((a) => a.status !== 200)).toEqual([])
    expect(cores.map((core, i) => core.stdout().split('commit retried').length - retriedBefore[i])).toEqual([0, 0])
    const stored = await rows<{ end_user_id: string; keys: string[] }>(sql`
      select end_user_id, array(select jsonb_object_keys(attributes) order by 1) as keys from end_users where end_user_id like 'circle-%' order by 1`)
    const keys = ['email', ...Array.from({ length: rounds }, (_, r) => `r${r}`)].sort()
    expect(stored).toEqual(pairs.flat().sort().map((end_user_id) => ({ end_user_id, keys })))
  })
})

describe.skipIf(engine !== 'postgres')('a resend landing on the other process while the first is committing', () => {
  test('events and replay chunks are stored once', async () => {
    const batches = Array.from({ length: 20 }, (_, b) => ({ sessionId: `dup-${b % 4}`, events: [0, 1, 2].map((j) => ({ eventName: 'twice', uuid: uuid(3, b * 3 + j) })) }))
    const chunks = Array.from({ length: 20 }, (_, c) => ({ sessionId: `dup-${c % 4}`, windowId: 'w', events: [move(t0 + c, c)] }))
    const answers = await Promise.all([
      ...batches.flatMap((body) => [post(cores[0], '/customEvent/batch', body), post(cores[1], '/customEvent/batch', body)]),
      ...chunks.flatMap((body) => [post(cores[1], '/events', body), post(cores[0], '/events', body)]),
    ])
    expect(answers.filter((a) => a.status !== 200)).toEqual([])
    expect(await rows(sql`select count(*)::int as n, count(distinct uuid)::int as d from events where session_id like 'dup-%'`)).toEqual([{ n: 60, d: 60 }])
    expect(await rows(sql`select count(*)::int as n from replay_chunks where session_id like 'dup-%'`)).toEqual([{ n: 20 }])
    expect(await rows(sql`select count(*)::int as n from sessions where session_id like 'dup-%'`)).toEqual([{ n: 4 }])
  })
})
