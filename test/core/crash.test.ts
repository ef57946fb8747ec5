import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { openEmbeddedDatabase, type Database } from '@sightline/core/db'
import { createTestDatabase, engine, TEST_DATABASE_URL } from '../helpers/database'
import { requestByHand, spawnCore, type CoreProcess } from '../helpers/process'
import { ownDatabases, welcomeKeyOf } from '../helpers/own-databases'
import { holdCommits, proxiedTestDatabase } from '../helpers/breakable-database'

// "A 200 means stored, and nothing acknowledged is lost or stored twice", with real processes that
// crash: core killed mid-load, its database connections cut mid-load, and a stop asked for mid-load.
// The load is what the tracker sends: single and batched custom events with uuids, replay chunks
// with a window and a seq; every answer is recorded, then the tables are read item by item.

interface TrackerRequest {
  path: string
  body: object
  /** What the request stores: event uuids, or `session|window|seq` of a replay chunk. */
  items: string[]
}

interface Answer extends TrackerRequest {
  /** HTTP status, or null when the connection failed without an answer. */
  status: number | null
  retryAfter: string | null
  /** When it was sent (performance.now()) and how long its answer took. */
  sentAt: number
  ms: number
}

let sent = 0
function trackerRequest(run: string): TrackerRequest {
  const n = ++sent
  const sessionId = `${run}-s${n % 7}`
  const uuid = (j: number) => `0190a4b4-0000-7000-8000-${String(n * 10 + j).padStart(12, '0')}`
  if (n % 3 === 0) return { path: '/api/ingestion/customEvent', body: { sessionId, eventName: 'single', uuid: uuid(0) }, items: [uuid(0)] }
  if (n % 3 === 1) {
    const uuids = [1, 2, 3, 4].map(uuid)
    return { path: '/api/ingestion/customEvent/batch', body: { sessionId, events: uuids.map((id) => ({ eventName: 'batched', uuid: id })) }, items: uuids }
  }
  const windowId = `w${n % 2}`
  const events = [{ type: 3, timestamp: 1_700_000_000_000 + n, data: { source: 1, n } }]
  return { path: '/api/ingestion/events', body: { sessionId, windowId, seq: n, events }, items: [`${sessionId}|${windowId}|${n}`] }
}

async function send(url: string, key: string, request: TrackerRequest): Promise<Answer> {
  const started = performance.now()
  try {
    const res = await fetch(`${url}${request.path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(request.body) })
    await res.arrayBuffer()
    return { ...request, status: res.status, retryAfter: res.headers.get('retry-after'), sentAt: started, ms: performance.now() - started }
  } catch {
    return { ...request, status: null, retryAfter: null, sentAt: started, ms: performance.now() - started }
  }
}

/** `concurrency` clients sending one request after another until stopped. */
function startLoad(core: CoreProcess, key: string, run: string, concurrency = 12) {
  const answers: Answer[] = []
  let stopped = false
  const clients = Array.from({ length: concurrency }, async () => {
    while (!stopped) {
      const answer = await send(core.url, key, trackerRequest(run))
      answers.push(answer)
      if (answer.status !== 200) await Bun.sleep(20)
    }
  })
  return {
    answers,
    async stop() {
      stopped = true
      await Promise.all(clients)
    },
  }
}

/**
 * A request core has in hand but whose body waits for `finish`: core asked for the body (100 Continue),
 * so the request is under way in core from then on, however busy the machine.
 */
async function requestAwaitingItsBody(core: CoreProcess, key: string, request: TrackerRequest) {
  const body = JSON.stringify(request.body)
  const head = [
    `POST ${request.path} HTTP/1.1`,
    'Host: core',
    `Authorization: Bearer ${key}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Expect: 100-continue',
    'Connection: close',
  ]
  const connection = await requestByHand(core.url, `${head.join('\r\n')}\r\n\r\n`)
  while (!connection.answer().startsWith('HTTP/1.1 100 ') && !connection.closed()) await Bun.sleep(5)
  const sentAt = performance.now()
  return {
    async finish(): Promise<Answer> {
      connection.send(body)
      await connection.finished
      const status = connection.answer().match(/HTTP\/1\.1 (?!100)(\d{3})/)?.[1]
      return { ...request, status: status ? Number(status) : null, retryAfter: null, sentAt, ms: performance.now() - sentAt }
    },
  }
}

/** How many times each item of the run is stored. */
async function storedItems(db: Database, run: string): Promise<Map<string, number>> {
  const like = `${run}-%`
  const events = await db.rows<{ id: string; n: number }>(sql`select uuid::text as id, count(*)::int as n from events where session_id like ${like} group by uuid`)
  const chunks = await db.rows<{ id: string; n: number }>(
    sql`select session_id || '|' || window_id || '|' || seq as id, count(*)::int as n from replay_chunks where session_id like ${like} group by 1`,
  )
  return new Map([...events, ...chunks].map(({ id, n }) => [id, n]))
}

/** Every acknowledged item is stored, none twice, and nothing is stored that no request carried. */
function expectAcknowledgedStoredOnce(answers: Answer[], stored: Map<string, number>) {
  const acknowledged = answers.filter((a) => a.status === 200).flatMap((a) => a.items)
  expect(acknowledged.length).toBeGreaterThan(0)
  expect(acknowledged.filter((id) => stored.get(id) !== 1)).toEqual([])
  expect([...stored].filter(([, n]) => n !== 1)).toEqual([])
  const carried = new Set(answers.flatMap((a) => a.items))
  expect([...stored.keys()].filter((id) => !carried.has(id))).toEqual([])
}

/** How many answers had each status that a stop may give: 200, 503, none; `other` counts the rest. */
function countStatuses(answers: Answer[]) {
  const counts = { 200: 0, 503: 0, none: 0, other: 0 }
  for (const { status } of answers) {
    if (status === 200 || status === 503) counts[status]++
    else if (status === null) counts.none++
    else counts.other++
  }
  return counts
}

const own = ownDatabases('sightline-crash-')
afterAll(() => own.close())

/** The environment of a core on its own database of this engine, and a way to read that database. */
async function ownDatabase(): Promise<{ env: Record<string, string>; read<T>(fn: (db: Database) => Promise<T>): Promise<T> }> {
  const { env, database, dataDir } = await own.create()
  if (database) return { env, read: (fn) => fn(database.db) }
  return {
    env,
    // The embedded database is one process's at a time: read it while no core runs.
    async read(fn) {
      const db = await openEmbeddedDatabase(dataDir!)
      try {
        return await fn(db)
      } finally {
        await db.close()
      }
    },
  }
}

describe('core killed mid-load', () => {
  test('starts again on the same data; every acknowledged item is stored once, and so is every resend', async () => {
    const { env, read } = await ownDatabase()
    let core = await spawnCore(env)
    const key = welcomeKeyOf(core)
    const answers: Answer[] = []
    try {
      // Two crash points: early in the load, and once commits are well under way.
      for (const after of [150, 700]) {
        const load = startLoad(core, key, 'kill')
        await Bun.sleep(after)
        core.proc.kill('SIGKILL')
        await core.proc.exited
        await load.stop()
        answers.push(...load.answers)
        core = await spawnCore(env)
        const first = await send(core.url, key, trackerRequest('kill'))
        expect(first.status).toBe(200)
        answers.push(first)
      }
      // The client resends only what was not acknowledged: an acknowledged item that was lost stays
      // missing, and one stored twice stays twice. Every item ends up stored once.
      const resent = await Promise.all(answers.filter((a) => a.status !== 200).map((a) => send(core.url, key, a)))
      expect(resent.filter((a) => a.status !== 200)).toEqual([])
      await core.stop()
      const stored = await read((db) => storedItems(db, 'kill'))
      expectAcknowledgedStoredOnce(answers, stored)
      expect([...new Set(answers.flatMap((a) => a.items))].filter((id) => stored.get(id) !== 1)).toEqual([])
    } finally {
      core.proc.kill('SIGKILL')
    }
  })
})

describe.skipIf(engine !== 'embedded')('embedded database lock', () => {
  test("a killed core's lock, its pid now another process's, does not keep the next core from starting", async () => {
    const { env } = await ownDatabase()
    const killed = await spawnCore(env)
    const key = welcomeKeyOf(killed)
    killed.proc.kill('SIGKILL')
    await killed.proc.exited
    // The system hands the dead core's pid to another process (a restarted container numbers its
    // processes alike, so the pid in a stale lock is often alive).
    const other = Bun.spawn(['sleep', '30'])
    const lockFile = join(env.DATA_DIR, 'sightline.lock')
    writeFileSync(lockFile, readFileSync(lockFile, 'utf8').replace(/^\d+/, String(other.pid)))
    try {
      const core = await spawnCore(env)
      expect((await send(core.url, key, trackerRequest('lock'))).status).toBe(200)
      await core.stop()
    } finally {
      other.kill()
    }
  })

  test('a running core keeps out a second whatever pid its lock file names (a core in another container, on the same volume)', async () => {
    const { env } = await ownDatabase()
    const running = await spawnCore(env)
    try {
      // A core in another pid namespace is no process here: its pid (often 1, as every container's
      // first) names nothing or someone else. Written as such a core would have written it.
      writeFileSync(join(env.DATA_DIR, 'sightline.lock'), '4194305 1')
      const second = await spawnCore(env).catch((error: Error) => error)
      expect(String(second)).toContain('in use by process 4194305')
      expect((await send(running.url, welcomeKeyOf(running), trackerRequest('lock'))).status).toBe(200)
    } finally {
      await running.stop()
    }
  })
})

describe('core stopped mid-load', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal}: every request under way is answered, 200 only once stored, and the process exits soon`, async () => {
      const { env, read } = await ownDatabase()
      const core = await spawnCore(env)
      const key = welcomeKeyOf(core)
      const load = startLoad(core, key, signal)
      await Bun.sleep(400)
      const awaitingItsBody = await requestAwaitingItsBody(core, key, trackerRequest(signal))
      const signalled = performance.now()
      core.proc.kill(signal)
      await Bun.sleep(50)
      const lastTakenIn = await awaitingItsBody.finish()
      const exitCode = await core.proc.exited
      const stoppedAfter = performance.now() - signalled
      await load.stop()
      const answers = [...load.answers, lastTakenIn]
      const answered = answers.filter((a) => a.status === 200).length
      // The log has a line for every request answered, those answered during the stop included.
      const logged = () => core.stdout().split('\n').filter((line) => line.includes('"msg":"request"') && line.includes('"status":200')).length
      for (let i = 0; i < 40 && logged() < answered; i++) await Bun.sleep(25)
      // One comparison, so that a failure shows all of it, and the counts behind it.
      expect({
        exitCode,
        stoppedAfterMs: Math.round(stoppedAfter),
        stoppedSoon: stoppedAfter < 5_000,
        answers: countStatuses(answers),
        underWay: countStatuses(answers.filter((a) => a.sentAt < signalled && a.sentAt + a.ms > signalled)),
        lastTakenIn: lastTakenIn.status,
        loggedAnswers: logged(),
      }).toMatchObject({
        exitCode: 0,
        stoppedSoon: true,
        // What core had taken in is answered; a request still on its way (or sent later) may find no one.
        answers: { other: 0 },
        lastTakenIn: 200,
        loggedAnswers: answered,
      })
      expectAcknowledgedStoredOnce(answers, await read((db) => storedItems(db, signal)))
    })
  }
})

describe.skipIf(engine !== 'postgres')('core stopped while commits wait', () => {
  test('SIGTERM: requests whose commits are under way are committed and answered 200 before the process exits', async () => {
    const database = await createTestDatabase()
    own.databases.push(database)
    const core = await spawnCore({ DATABASE_URL: database.url! })
    const key = welcomeKeyOf(core)
    const admin = postgres(database.url!, { max: 1, onnotice: () => {} })
    try {
      const first = await send(core.url, key, trackerRequest('held'))
      expect(first.status).toBe(200)
      const commits = await holdCommits(admin)
      const pending = Array.from({ length: 12 }, () => send(core.url, key, trackerRequest('held')))
      await Bun.sleep(300)
      core.proc.kill('SIGTERM')
      await Bun.sleep(300)
      expect(core.proc.exitCode).toBeNull() // still committing what it took in
      await commits.release()
      const answers = await Promise.all(pending)
      expect(await core.proc.exited).toBe(0)
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
      expectAcknowledgedStoredOnce([first, ...answers], await storedItems(database.db, 'held'))
    } finally {
      core.proc.kill('SIGKILL')
      await admin.end()
    }
  })
})

describe.skipIf(engine !== 'postgres')('database connections lost mid-load (Postgres restarting)', () => {
  test('core stays up, answers 503 with Retry-After meanwhile, recovers by itself; acknowledged items and resends are stored once', async () => {
    const { database, proxy, url } = await proxiedTestDatabase()
    own.databases.push(database)
    const target = new URL(database.url!)
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    const core = await spawnCore({ DATABASE_URL: url })
    const key = welcomeKeyOf(core)
    try {
      const load = startLoad(core, key, 'cut')
      // The connections drop under core (the server stopped), then the server ends them itself
      // (what a restart does to every session), each time in the middle of commits.
      await Bun.sleep(300)
      proxy.stop()
      await Bun.sleep(300)
      proxy.resume()
      await Bun.sleep(300)
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${target.pathname.slice(1)} and pid <> pg_backend_pid()`
      const terminated = performance.now()
      // Back to 200s without a restart of core: the latest answers, all sent after the terminations, are 200.
      const { answers } = load
      const streakOf200 = () => {
        let n = 0
        for (let i = answers.length - 1; i >= 0 && answers[i].status === 200 && answers[i].sentAt > terminated + 50; i--) n++
        return n
      }
      const deadline = Date.now() + 5_000
      while (streakOf200() < 20 && Date.now() < deadline) await Bun.sleep(50)
      await load.stop()

      expect(core.proc.exitCode).toBeNull()
      expect(streakOf200()).toBeGreaterThanOrEqual(20)
      expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0)
      expect(answers.filter((a) => a.status !== 200 && !(a.status === 503 && /^\d+$/.test(a.retryAfter ?? '')))).toEqual([])
      // A lost connection fails its commit at once, not at the writer's commit timeout (10 s).
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(5_000)
      expectAcknowledgedStoredOnce(answers, await storedItems(database.db, 'cut'))

      const resent = await Promise.all(answers.filter((a) => a.status !== 200).map((a) => send(core.url, key, a)))
      expect(resent.filter((a) => a.status !== 200)).toEqual([])
      const stored = await storedItems(database.db, 'cut')
      expect([...new Set(answers.flatMap((a) => a.items))].filter((id) => stored.get(id) !== 1)).toEqual([])
    } finally {
      // Its stop is not what this test is about (after a lost connection, closing the pool can take
      // its 5 s timeout).
      core.proc.kill('SIGKILL')
      await admin.end()
      proxy.close()
    }
  })
})
