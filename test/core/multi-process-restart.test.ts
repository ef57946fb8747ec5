import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { postgresDatabase } from '@sightline/core/db'
import { createProject } from '@sightline/core/projects/service'
import { engine } from '../helpers/database'
import { postgresBinaries, startPostgresServer, type PostgresServer } from '../helpers/postgres-server'
import { spawnCore, type CoreProcess } from '../helpers/process'

// Two core processes behind a load balancer share one Postgres server, and the server is restarted
// (fast shutdown, then started again on the same port) twice while clients send what the tracker
// sends to both: single and batched custom events with uuids, replay chunks with a window and a seq,
// identifies. Like the tracker, a client resends an answer's 503 with the same body (here through
// the other process, as a load balancer may). Afterwards every item is in the tables exactly once,
// every 200 was stored, and while the server was down both processes answered 503
// storage_unavailable with Retry-After, never anything else, and never nothing. The server is this
// test's own: restarting a shared one would break every other test using it. Postgres only (the
// embedded database has no server to restart), and only where the server binaries are installed.

const binaries = postgresBinaries()
const runs = engine === 'postgres' && binaries !== undefined
if (engine === 'postgres' && !binaries) console.warn('multi-process-restart: skipped: no Postgres server binaries under /usr/lib/postgresql (Debian package postgresql)')

/**
 * A client gives up on an answer after this long, so that a request that hangs fails the test instead
 * of stalling it: past the longest core itself may take to answer (a commit or a key lookup gives up
 * after 10 s and is answered 503).
 */
const CLIENT_TIMEOUT_MS = 12_000
/**
 * How long both processes may take to store writes again once the server takes connections: the
 * pause of a connection refused while it was down (2 s, see postgres-socket.ts), the writer's 1 s of
 * failing fast after a failed commit, and slack for a busy machine. Under 1 s in five runs of this test.
 */
const RECOVERY_BOUND_MS = 6_000
/**
 * How long the server stays down each time: longer than `/health` waits for the database (2 s), so
 * that a probe sent as it stopped is answered before it is back.
 */
const DOWN_MS = 2_500
/** A client's wait before resending a 503 (shorter than Retry-After, so the outage meets many resends). */
const RESEND_WAIT_MS = 150

interface Request {
  path: string
  body: object
  /** What the request stores: `event:<uuid>`, `chunk:<session>|<window>|<seq>` or `attribute:<user>|<name>`. */
  items: string[]
}

interface Attempt {
  request: Request
  core: number
  /** HTTP status, or null when no answer came (a failed connection or the client's timeout). */
  status: number | null
  retryAfter: string | null
  body: unknown
  /** performance.now() when sent and when answered. */
  sentAt: number
  answeredAt: number
}

let server: PostgresServer
let cores: CoreProcess[] = []
let key = ''
const attempts: Attempt[] = []

beforeAll(async () => {
  if (!runs) return
  server = await startPostgresServer()
  const db = postgresDatabase(server.url)
  await db.migrate()
  key = (await createProject(db.orm, { name: 'restarted' })).keys.production
  await db.close()
  cores = await Promise.all([spawnCore({ DATABASE_URL: server.url }), spawnCore({ DATABASE_URL: server.url })])
})
afterAll(async () => {
  for (const core of cores) core.proc.kill('SIGKILL')
  await server?.close()
})

let made = 0
const uuid = (n: number) => `0190a4b4-0000-7000-8000-${String(n).padStart(12, '0')}`
/** The next request a tracker would send: the four kinds in turn, over a few sessions. */
function nextRequest(): Request {
  const n = ++made
  const sessionId = `restart-s${n % 9}`
  switch (n % 4) {
    case 0:
      return { path: '/customEvent', body: { sessionId, eventName: 'single', uuid: uuid(n * 10) }, items: [`event:${uuid(n * 10)}`] }
    case 1: {
      const uuids = [1, 2, 3].map((j) => uuid(n * 10 + j))
      return { path: '/customEvent/batch', body: { sessionId, events: uuids.map((id) => ({ eventName: 'batched', uuid: id })) }, items: uuids.map((id) => `event:${id}`) }
    }
    case 2: {
      const windowId = `w${n % 2}`
      const events = [{ type: 3, timestamp: 1_700_000_000_000 + n, data: { source: 1, positions: [{ x: n, y: 1, id: 1, timeOffset: 0 }] } }]
      return { path: '/events', body: { sessionId, windowId, seq: n, events }, items: [`chunk:${sessionId}|${windowId}|${n}`] }
    }
    default: {
      const userId = `restart-u${n % 5}`
      return { path: '/user', body: { sessionId, userId, userAttributes: { [`a${n}`]: n } }, items: [`attribute:${userId}|a${n}`] }
    }
  }
}

async function send(core: number, request: Request): Promise<Attempt> {
  const sentAt = performance.now()
  try {
    const res = await fetch(`${cores[core].url}/api/ingestion${request.path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify(request.body),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    })
    const body = await res.json().catch(() => null)
    return { request, core, status: res.status, retryAfter: res.headers.get('retry-after'), body, sentAt, answeredAt: performance.now() }
  } catch {
    return { request, core, status: null, retryAfter: null, body: null, sentAt, answeredAt: performance.now() }
  }
}

/** Sends `request` until it is answered 200, each resend through the other process; false if `until` came first. */
async function deliver(first: number, request: Request, until: () => boolean): Promise<boolean> {
  for (let core = first; ; core = 1 - core) {
    const attempt = await send(core, request)
    attempts.push(attempt)
    if (attempt.status === 200) return true
    if (until()) return false
    await Bun.sleep(RESEND_WAIT_MS)
  }
}

/** `clients` tracker-like clients, half starting on each process, each sending one request after another. */
function startLoad(clients: number) {
  let stopped = false
  let drainBy = Infinity
  const undelivered: Request[] = []
  const running = Array.from({ length: clients }, async (_, i) => {
    while (!stopped) {
      const request = nextRequest()
      // A request begun before the stop is delivered still, as a tracker's outbox would, within reason.
      if (!(await deliver(i % 2, request, () => performance.now() > drainBy))) undelivered.push(request)
    }
  })
  return {
    async stop(drainMs: number) {
      stopped = true
      drainBy = performance.now() + drainMs
      await Promise.all(running)
      return undelivered
    },
  }
}

/** Polls `/health` (the readiness probe: 503 degraded without the database) of both processes. */
function watchReadiness() {
  const seen: { core: number; sentAt: number; answeredAt: number; status: number | null }[] = []
  let stopped = false
  const watching = [0, 1].map(async (core) => {
    while (!stopped) {
      const sentAt = performance.now()
      const status = await fetch(`${cores[core].url}/health`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) }).then(
        (res) => res.status,
        () => null,
      )
      seen.push({ core, sentAt, answeredAt: performance.now(), status })
      await Bun.sleep(100)
    }
  })
  return {
    seen,
    /** Resolves once both processes were found ready by a probe sent after `since`, or after the bound. */
    async bothReadyAfter(since: number) {
      const ready = (core: number) => seen.some((p) => p.core === core && p.sentAt > since && p.status === 200)
      while (!(ready(0) && ready(1)) && performance.now() < since + RECOVERY_BOUND_MS) await Bun.sleep(50)
    },
    async stop() {
      stopped = true
      await Promise.all(watching)
    },
  }
}

/** How long until `core` stores `request`, resent to it again and again from `since`. */
async function recoveryOf(core: number, request: Request, since: number): Promise<number> {
  const deadline = since + RECOVERY_BOUND_MS
  while (performance.now() < deadline) {
    const attempt = await send(core, request)
    attempts.push(attempt)
    if (attempt.status === 200) return attempt.answeredAt - since
    await Bun.sleep(50)
  }
  return Infinity
}

/** How many times each item is stored. */
async function storedItems(): Promise<Map<string, number>> {
  const sql = postgres(server.url, { max: 1, onnotice: () => {} })
  try {
    const events = await sql<{ id: string; n: number }[]>`select 'event:' || uuid as id, count(*)::int as n from events group by uuid`
    const chunks = await sql<{ id: string; n: number }[]>`select 'chunk:' || session_id || '|' || window_id || '|' || seq as id, count(*)::int as n from replay_chunks group by 1`
    // An identify merges its attributes into its end user's: each attribute is there once per row of that user.
    const attributes = await sql<{ id: string; n: number }[]>`
      select 'attribute:' || end_user_id || '|' || name as id, count(*)::int as n
      from end_users, jsonb_object_keys(attributes) as name where end_user_id like 'restart-u%' group by 1`
    return new Map([...events, ...chunks, ...attributes].map(({ id, n }) => [id, n]))
  } finally {
    await sql.end()
  }
}

describe.skipIf(!runs)('the Postgres server restarted under load from two core processes', () => {
  test('503 storage_unavailable with Retry-After while it is down, unready and back, both recover; every item stored once', async () => {
    const readiness = watchReadiness()
    const load = startLoad(12)
    const outages: { down: number; up: number }[] = []
    const recoveries: number[][] = []
    const answersWhileDown: Attempt[] = []
    let undelivered: Request[] = []
    try {
      for (const settle of [1_000, 1_500]) {
        await Bun.sleep(settle)
        await server.stop('fast')
        const down = performance.now()
        // A write sent to each process while the server is down; resent below until stored.
        const probes = [nextRequest(), nextRequest()]
        await Bun.sleep(DOWN_MS / 4)
        const whileDown = await Promise.all(probes.map((request, core) => send(core, request)))
        answersWhileDown.push(...whileDown)
        attempts.push(...whileDown)
        await Bun.sleep(down + DOWN_MS - performance.now())
        const startAt = performance.now()
        await server.start()
        const up = performance.now()
        outages.push({ down, up: startAt })
        recoveries.push(await Promise.all(probes.map((request, core) => recoveryOf(core, request, up))))
        await readiness.bothReadyAfter(startAt)
      }
      await Bun.sleep(500)
    } finally {
      // Requests begun before the stop are delivered, as the tracker's outbox delivers them later.
      undelivered = await load.stop(CLIENT_TIMEOUT_MS)
      await readiness.stop()
    }

    // Both processes are still running and stored writes again within the bound after each start.
    for (const core of cores) if (core.proc.exitCode !== null) console.error(`a core exited (${core.proc.exitCode}):\n${core.output().slice(-6000)}`)
    expect(cores.map((core) => core.proc.exitCode)).toEqual([null, null])
    for (const times of recoveries) for (const ms of times) expect(ms).toBeLessThan(RECOVERY_BOUND_MS)
    expect(undelivered).toEqual([])

    // Every answer was a 200 or WIRE.md's 503 for storage trouble, with Retry-After; none hung or failed.
    const notOk = attempts.filter((a) => a.status !== 200)
    expect(notOk.filter((a) => a.status !== 503 || !/^\d+$/.test(a.retryAfter ?? ''))).toEqual([])
    for (const a of notOk) expect(a.body).toEqual({ success: false, error: { code: 'storage_unavailable', message: expect.any(String) } })

    // While the server was down (sent after it stopped and answered before it started), each process
    // answered, and only 503: a 200 then would be a write it never stored.
    expect(answersWhileDown.map((a) => [a.core, a.status])).toEqual([[0, 503], [1, 503], [0, 503], [1, 503]])
    for (const { down, up } of outages) {
      const during = attempts.filter((a) => a.sentAt > down && a.answeredAt < up)
      expect(during.filter((a) => a.status !== 503)).toEqual([])
      // /health said unready while the server was down (a probe may wait up to its 2 s for the
      // database, so one asked during the stop may be answered during the outage), and ready again
      // within the bound after it came back.
      for (const core of [0, 1]) {
        const probes = readiness.seen.filter((p) => p.core === core)
        expect(probes.some((p) => p.sentAt < up && p.answeredAt > down && p.status === 503)).toBe(true)
        const ready = probes.find((p) => p.sentAt > up && p.status === 200)
        expect(ready).toBeDefined()
        expect(ready!.answeredAt - up).toBeLessThan(RECOVERY_BOUND_MS)
      }
    }
    // Answered within its 2 s wait for the database (and some slack for a busy machine).
    expect(readiness.seen.filter((p) => (p.status !== 200 && p.status !== 503) || p.answeredAt - p.sentAt > 4_000)).toEqual([])

    // Every item of every request is stored exactly once: those acknowledged, those whose 503 was
    // resent until acknowledged (their first commit may have landed before its answer was lost), and
    // nothing that no request carried.
    const stored = await storedItems()
    const acknowledged = attempts.filter((a) => a.status === 200).flatMap((a) => a.request.items)
    const carried = new Set(attempts.flatMap((a) => a.request.items))
    expect(acknowledged.length).toBeGreaterThan(200)
    expect(acknowledged.filter((id) => stored.get(id) !== 1)).toEqual([])
    expect([...carried].filter((id) => stored.get(id) !== 1)).toEqual([])
    expect([...stored].filter(([, n]) => n !== 1)).toEqual([])
    expect([...stored.keys()].filter((id) => !carried.has(id))).toEqual([])
    console.log(`multi-process-restart: ${attempts.length} attempts, ${notOk.length} answered 503; stored again after ${recoveries.map((r) => r.map((ms) => `${Math.round(ms)} ms`).join(' / ')).join(', ')}`)
  }, 90_000)
})
