import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { createLiveViewerReader, liveSessions, liveWindows, registerLiveViewer, unregisterLiveViewer } from '@sightline/core/ingest/presence/store'
import { lastChangePerWindow, presenceRows, type PresenceChange } from '@sightline/core/ingest/presence/service'
import { presenceSink } from '@sightline/core/ingest/presence/store'
import { endUsersSink, sessionsSink } from '@sightline/core/ingest/sessions/store'
import type { Orm } from '@sightline/core/db'
import { createProject } from '@sightline/core/projects/service'
import { startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase, engine, type TestDatabase } from '../../helpers/database'
import { spawnCore, type CoreProcess } from '../../helpers/process'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const db = () => core.database.db
const projectId = () => core.project.projectId
const beat = (sessionId: string, windowId?: string, extra: object = {}) => core.post('/api/ingestion/heartbeat', { sessionId, windowId, ...extra })
const end = (sessionId: string, windowId?: string) => core.post('/api/ingestion/session-end', { sessionId, windowId })
const windowsOf = async (sessionId: string) => (await liveWindows(db(), projectId(), sessionId)).map((w) => w.windowId)
const endedAt = async (sessionId: string) =>
  (await db().rows<{ ended_at: unknown }>(sql`select ended_at from sessions where session_id = ${sessionId}`))[0]?.ended_at ?? null
/** Moves a window's last beat into the past, as if that much time had gone by without one. */
const age = (sessionId: string, windowId: string, seconds: number) =>
  db().rows(sql`update presence set last_seen_at = last_seen_at - make_interval(secs => ${seconds}) where session_id = ${sessionId} and window_id = ${windowId}`)

describe('heartbeat and session-end', () => {
  test('a heartbeat creates the session and marks its window live; the answer says whether a viewer watches', async () => {
    const res = await beat('p-1', 'w-1', { endUserId: 'user-p', url: 'https://shop.example/cart' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, liveViewer: false })
    const [window] = await liveWindows(db(), projectId(), 'p-1')
    expect(window).toMatchObject({ windowId: 'w-1', url: 'https://shop.example/cart' })
    expect(await db().rows(sql`select end_user_id from sessions where session_id = 'p-1'`)).toEqual([{ end_user_id: 'user-p' }])
    expect(await liveSessions(db(), projectId())).toContain('p-1')
  })

  test('several windows: live while any beats; the last goodbye ends the session; a new beat revives it', async () => {
    await beat('p-2', 'w-a')
    await beat('p-2', 'w-b')
    expect(await windowsOf('p-2')).toEqual(['w-a', 'w-b'])

    const first = await end('p-2', 'w-a')
    expect(await first.json()).toEqual({ success: true })
    expect(await windowsOf('p-2')).toEqual(['w-b'])
    expect(await endedAt('p-2')).toBeNull()

    await end('p-2', 'w-b')
    expect(await windowsOf('p-2')).toEqual([])
    expect(await liveSessions(db(), projectId())).not.toContain('p-2')
    const ended = await endedAt('p-2')
    expect(ended).not.toBeNull()

    // A repeated goodbye keeps the first end time.
    await end('p-2', 'w-b')
    expect(await endedAt('p-2')).toEqual(ended)

    // Back from the back/forward cache: live again, no longer ended.
    await beat('p-2', 'w-a')
    expect(await windowsOf('p-2')).toEqual(['w-a'])
    expect(await endedAt('p-2')).toBeNull()
  })

  test('a goodbye resent later (a relay retrying, another process) moves neither the end nor the last activity of the ended session', async () => {
    const times = async (sessionId: string) =>
      (await db().rows<{ last: unknown; ended: unknown }>(sql`select last_activity_at as last, ended_at as ended from sessions where session_id = ${sessionId}`))[0]
    await beat('p-resent', 'w-1')
    const beaten = await times('p-resent')
    // Past the resolution under which a process skips writing a touch it already made.
    await Bun.sleep(1_200)
    await end('p-resent', 'w-1')
    const first = await times('p-resent')
    expect(first.ended).not.toBeNull()
    // The first goodbye is activity of the session it ends.
    expect(new Date(first.last as string).getTime()).toBeGreaterThan(new Date(beaten.last as string).getTime() + 1_000)
    await Bun.sleep(1_200)
    expect((await end('p-resent', 'w-1')).status).toBe(200)
    expect(await times('p-resent')).toEqual(first)
  })

  test('a session never ends before its last activity: a client clock ahead, what the page sent racing its goodbye', async () => {
    const times = async (sessionId: string) =>
      (
        await db().rows<{ last: number; ended: number | null }>(
          sql`select (extract(epoch from last_activity_at) * 1000)::float8 as last, (extract(epoch from ended_at) * 1000)::float8 as ended
              from sessions where session_id = ${sessionId}`,
        )
      )[0]
    const event = (sessionId: string, timestamp: number) => core.post('/api/ingestion/customEvent', { sessionId, eventName: 'e', timestamp })
    // A clock five minutes ahead (well inside the 24 h that are taken as they come), then the goodbye.
    const ahead = Date.now() + 5 * 60_000
    await beat('p-clock', 'w-1')
    expect((await event('p-clock', ahead)).status).toBe(200)
    await end('p-clock', 'w-1')
    expect(await times('p-clock')).toEqual({ last: ahead, ended: ahead })

    // The page's last events committed after its goodbye: the end moves to them.
    await beat('p-race', 'w-1')
    await end('p-race', 'w-1')
    const endedFirst = (await times('p-race')).ended!
    const later = endedFirst + 2_000
    expect((await event('p-race', later)).status).toBe(200)
    expect(await times('p-race')).toEqual({ last: later, ended: later })
    // Earlier activity arriving late leaves the end where it is.
    expect((await event('p-race', endedFirst - 60_000)).status).toBe(200)
    expect((await times('p-race')).ended).toBe(later)

    // A session that has not ended is not ended by activity.
    expect((await event('p-open', Date.now())).status).toBe(200)
    expect((await times('p-open')).ended).toBeNull()
  })

  test('a window silent for more than 90 s no longer counts; a tracker without window ids has one window', async () => {
    await beat('p-3', 'w-1')
    await beat('p-3', 'w-2')
    await age('p-3', 'w-1', 91)
    expect(await windowsOf('p-3')).toEqual(['w-2'])
    await age('p-3', 'w-2', 89)
    expect(await windowsOf('p-3')).toEqual(['w-2'])
    // The goodbye of the last live window ends the session although a silent one never said goodbye.
    await end('p-3', 'w-2')
    expect(await endedAt('p-3')).not.toBeNull()
    expect(await db().rows(sql`select window_id from presence where session_id = 'p-3'`)).toEqual([])

    await beat('p-4')
    expect(await windowsOf('p-4')).toEqual([''])
    await end('p-4')
    expect(await windowsOf('p-4')).toEqual([])
  })

  test('a window that went quiet without a goodbye (a crash, a session expired while idle) does not stay stored for ever', async () => {
    const stored = async (sessionId: string) => (await db().rows<{ window_id: string }>(sql`select window_id from presence where session_id = ${sessionId}`)).map((r) => r.window_id)
    await beat('p-gone', 'w-1')
    await beat('p-quiet', 'w-1')
    await age('p-gone', 'w-1', 24 * 3600)
    await age('p-quiet', 'w-1', 89)
    // The next heartbeat of the project, of any session, takes the windows that are no longer live.
    await beat('p-other', 'w-1')
    expect(await stored('p-gone')).toEqual([])
    expect(await stored('p-quiet')).toEqual(['w-1'])
    expect(await windowsOf('p-quiet')).toEqual(['w-1'])
    // Its session, left without a window, has ended (see 'sessions left by windows that went quiet').
    expect(await endedAt('p-gone')).not.toBeNull()
    expect(await endedAt('p-quiet')).toBeNull()
    // Such a window beating again is live again.
    await beat('p-gone', 'w-1')
    expect(await windowsOf('p-gone')).toEqual(['w-1'])
  })

  test('liveViewer: true while a viewer is registered, false once it leaves or its registration lapses', async () => {
    await beat('p-5', 'w')
    expect(await registerLiveViewer(db(), projectId(), 'p-5')).toBe(true)
    expect(await (await beat('p-5', 'w')).json()).toEqual({ success: true, liveViewer: true })
    expect(await createLiveViewerReader(db())(projectId(), 'p-5')).toBe(true)
    await unregisterLiveViewer(db(), projectId(), 'p-5')
    expect(await (await beat('p-5', 'w')).json()).toEqual({ success: true, liveViewer: false })

    expect(await registerLiveViewer(db(), projectId(), 'p-5', 0.5)).toBe(true)
    expect(await (await beat('p-5', 'w')).json()).toMatchObject({ liveViewer: true })
    await Bun.sleep(700)
    expect(await (await beat('p-5', 'w')).json()).toMatchObject({ liveViewer: false })

    expect(await registerLiveViewer(db(), projectId(), 'no-such-session')).toBe(false)
    // Another project's viewer of a session with the same id is not this one's.
    const other = await createProject(db().orm, { name: 'other' })
    await db().rows(sql`insert into sessions (project_id, session_id, environment, started_at, last_activity_at) values (${other.projectId}, 'p-6', 'production', now(), now())`)
    await registerLiveViewer(db(), other.projectId, 'p-6')
    expect(await (await beat('p-6', 'w')).json()).toMatchObject({ liveViewer: false })
  })

  test('beacons: text/plain with the key in the body', async () => {
    const res = await core.request('/api/ingestion/session-end', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify({ apiKey: core.key, sessionId: 'p-7', windowId: 'w' }),
    })
    expect(res.status).toBe(200)
    expect(await endedAt('p-7')).not.toBeNull()
  })

  test('within one commit, the last change of a window wins', () => {
    const change = (kind: PresenceChange['kind'], windowId = 'w'): PresenceChange => ({ projectId: 'p', sessionId: 's', windowId, endUserId: null, url: null, kind })
    expect(lastChangePerWindow([change('beat'), change('end')]).map((c) => c.kind)).toEqual(['end'])
    expect(lastChangePerWindow([change('end'), change('beat'), change('beat', 'v')]).map((c) => `${c.windowId}:${c.kind}`)).toEqual(['v:beat', 'w:beat'])
  })

  test.each([
    ['/api/ingestion/heartbeat', {}, '/sessionId'],
    ['/api/ingestion/heartbeat', { sessionId: 's', windowId: 'has space' }, '/windowId'],
    ['/api/ingestion/heartbeat', { sessionId: 's', url: 5 }, '/url'],
    ['/api/ingestion/session-end', { sessionId: 7 }, '/sessionId'],
    ['/api/ingestion/session-end', { sessionId: 's', endUserId: 'x'.repeat(129) }, '/endUserId'],
  ])('validation: %s %j fails at %s', async (path, body, at) => {
    const res = await core.post(path, body)
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'validation_failed' }, path: at })
  })

  test('no key, a wrong key', async () => {
    const none = await core.post('/api/ingestion/heartbeat', { sessionId: 's' }, { key: null })
    expect(await none.json()).toMatchObject({ error: { code: 'missing_api_key' } })
    const wrong = await core.post('/api/ingestion/session-end', { sessionId: 's', apiKey: 'sl_dev_nope' }, { key: null })
    expect(wrong.status).toBe(401)
    expect(await wrong.json()).toMatchObject({ error: { code: 'invalid_api_key' } })
  })
})

/*
 * A window that stops beating without a goodbye (a crash, a killed tab, a beat delivered after the
 * goodbye by a relay's retry, which revives the session) is forgotten by a later commit of its
 * project; the session it leaves without a window ends when that window was last seen.
 */
describe('sessions left by windows that went quiet', () => {
  /** Exact to the microsecond, as stored. */
  const micros = (column: string) => sql.raw(`(extract(epoch from ${column}) * 1000000)::bigint::text`)
  const sessionTimes = async (sessionId: string) =>
    (
      await db().rows<{ ended: string | null; last: string }>(
        sql`select ${micros('ended_at')} as ended, ${micros('last_activity_at')} as last from sessions where session_id = ${sessionId}`,
      )
    )[0]
  const lastSeen = async (sessionId: string, windowId: string) =>
    (await db().rows<{ seen: string }>(sql`select ${micros('last_seen_at')} as seen from presence where session_id = ${sessionId} and window_id = ${windowId}`))[0]
      .seen
  const stored = async (sessionId: string) =>
    (await db().rows<{ window_id: string }>(sql`select window_id from presence where session_id = ${sessionId} order by window_id`)).map((r) => r.window_id)
  /** Moves a session and its windows into the past, as if that much time had gone by in silence. */
  const ageAll = async (sessionId: string, seconds: number) => {
    await db().rows(sql`update presence set last_seen_at = last_seen_at - make_interval(secs => ${seconds}) where session_id = ${sessionId}`)
    await db().rows(sql`
      update sessions set started_at = started_at - make_interval(secs => ${seconds}), last_activity_at = last_activity_at - make_interval(secs => ${seconds})
      where session_id = ${sessionId}`)
  }
  /** Another commit of the project: a heartbeat of some other session. */
  const anotherCommit = () => beat('q-bystander', 'w-1')

  test('a beat delivered after the last goodbye, then silence: the next commit of the project ends the session when its window was last seen', async () => {
    await beat('q-late', 'w-1')
    await end('q-late', 'w-1')
    expect((await sessionTimes('q-late')).ended).not.toBeNull()
    // The heartbeat sent just before the goodbye, delivered later by a relay's retry.
    await beat('q-late', 'w-1')
    expect((await sessionTimes('q-late')).ended).toBeNull()
    await ageAll('q-late', 120)
    const seen = await lastSeen('q-late', 'w-1')

    await anotherCommit()
    expect(await stored('q-late')).toEqual([])
    // Not the later commit's time: the window went quiet two minutes earlier.
    expect((await sessionTimes('q-late')).ended).toBe(seen)
    expect(Number(seen)).toBeLessThan(Date.now() * 1000 - 100_000_000)
  })

  test('the end is never before the last activity (what the page sent after its last beat, a client clock ahead)', async () => {
    await beat('q-active', 'w-1')
    await ageAll('q-active', 120)
    await db().rows(sql`update sessions set last_activity_at = now() - interval '60 seconds' where session_id = 'q-active'`)
    const { last } = await sessionTimes('q-active')
    expect(BigInt(last)).toBeGreaterThan(BigInt(await lastSeen('q-active', 'w-1')))

    await anotherCommit()
    expect(await stored('q-active')).toEqual([])
    expect(await sessionTimes('q-active')).toEqual({ ended: last, last })
  })

  test('a session with a window still live stays open; when that one goes quiet too, it ends at that window\'s last beat', async () => {
    await beat('q-two', 'w-a')
    await beat('q-two', 'w-b')
    await ageAll('q-two', 200)
    await beat('q-two', 'w-b')

    await anotherCommit()
    expect(await stored('q-two')).toEqual(['w-b'])
    expect(await windowsOf('q-two')).toEqual(['w-b'])
    expect((await sessionTimes('q-two')).ended).toBeNull()

    await ageAll('q-two', 120)
    const seen = await lastSeen('q-two', 'w-b')
    await anotherCommit()
    expect(await stored('q-two')).toEqual([])
    expect((await sessionTimes('q-two')).ended).toBe(seen)
  })

  test('a session that has ended keeps its end; a quiet window whose session row is gone is forgotten', async () => {
    await beat('q-ended', 'w-1')
    await end('q-ended', 'w-1')
    const { ended } = await sessionTimes('q-ended')
    expect(ended).not.toBeNull()
    // A window row left behind (a goodbye of another window racing this one's last beat), quiet since.
    await db().rows(sql`
      insert into presence (project_id, session_id, window_id, last_seen_at)
      values (${projectId()}, 'q-ended', 'w-2', now() - interval '1 hour'), (${projectId()}, 'q-no-row', 'w-1', now() - interval '1 hour')`)

    await anotherCommit()
    expect(await stored('q-ended')).toEqual([])
    expect(await stored('q-no-row')).toEqual([])
    expect((await sessionTimes('q-ended')).ended).toBe(ended)
    expect(await db().rows(sql`select 1 from sessions where session_id = 'q-no-row'`)).toEqual([])
  })

  // The embedded database runs one transaction at a time: no other can hold a row meanwhile.
  test.skipIf(engine !== 'postgres')('a session whose row another transaction holds is skipped without waiting, then ended by a later commit', async () => {
    await beat('q-held', 'w-1')
    await ageAll('q-held', 120)
    const seen = await lastSeen('q-held', 'w-1')

    const other = postgres(core.database.url!, { max: 1, onnotice: () => {} })
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding!: () => void
    const held = new Promise<void>((resolve) => (holding = resolve))
    const holder = other.begin(async (tx) => {
      // As a commit of that session holds it (see presenceSink).
      await tx`select 1 from sessions where session_id = 'q-held' for no key update`
      holding()
      await released
    })
    try {
      await held
      const answer = await Promise.race([anotherCommit(), Bun.sleep(5_000).then(() => 'waited' as const)])
      expect(answer).not.toBe('waited')
      expect((answer as Response).status).toBe(200)
      expect(await stored('q-held')).toEqual(['w-1'])
      expect((await sessionTimes('q-held')).ended).toBeNull()
    } finally {
      release()
      await holder
      await other.end()
    }

    await anotherCommit()
    expect(await stored('q-held')).toEqual([])
    expect((await sessionTimes('q-held')).ended).toBe(seen)
  })
})

/**
 * Several core processes on one database. On Postgres: two real core processes; the embedded
 * database takes one process at a time, so there: two cores in this process sharing it.
 */
describe('presence across cores', () => {
  let shared: TestDatabase
  let key: string
  let sharedProject: string
  const cores: { post(path: string, body: object): Promise<Response>; stop(): Promise<void> }[] = []

  beforeAll(async () => {
    shared = await createTestDatabase()
    const project = await createProject(shared.db.orm, { name: 'presence' })
    key = project.keys.production
    sharedProject = project.projectId
    for (let i = 0; i < 2; i++) {
      if (engine === 'postgres') {
        const proc: CoreProcess = await spawnCore({ DATABASE_URL: shared.url! })
        cores.push({
          post: (path, body) => fetch(`${proc.url}${path}`, { method: 'POST', body: JSON.stringify({ ...body, apiKey: key }) }),
          stop: () => proc.stop(),
        })
      } else {
        const inProcess = await startCore({ database: shared })
        cores.push({ post: (path, body) => inProcess.post(path, body, { key }), stop: () => inProcess.close() })
      }
    }
  })
  afterAll(async () => {
    await Promise.all(cores.map((c) => c.stop()))
    await shared.close()
  })

  test('windows beating through different cores make one live session; a viewer registered anywhere is seen everywhere', async () => {
    const [a, b] = cores
    expect((await a.post('/api/ingestion/heartbeat', { sessionId: 'x-1', windowId: 'w-a' })).status).toBe(200)
    expect((await b.post('/api/ingestion/heartbeat', { sessionId: 'x-1', windowId: 'w-b' })).status).toBe(200)
    expect((await liveWindows(shared.db, sharedProject, 'x-1')).map((w) => w.windowId)).toEqual(['w-a', 'w-b'])

    await registerLiveViewer(shared.db, sharedProject, 'x-1')
    expect(await (await a.post('/api/ingestion/heartbeat', { sessionId: 'x-1', windowId: 'w-a' })).json()).toEqual({ success: true, liveViewer: true })
    expect(await (await b.post('/api/ingestion/heartbeat', { sessionId: 'x-1', windowId: 'w-b' })).json()).toEqual({ success: true, liveViewer: true })

    await b.post('/api/ingestion/session-end', { sessionId: 'x-1', windowId: 'w-a' })
    expect((await liveWindows(shared.db, sharedProject, 'x-1')).map((w) => w.windowId)).toEqual(['w-b'])
    await a.post('/api/ingestion/session-end', { sessionId: 'x-1', windowId: 'w-b' })
    expect(await liveSessions(shared.db, sharedProject)).not.toContain('x-1')
  })

  test('the last two windows leaving at the same moment through two cores: the session ends', async () => {
    const sessions = Array.from({ length: 60 }, (_, i) => `race-${i}`)
    await Promise.all(sessions.flatMap((s) => cores.map((c, i) => c.post('/api/ingestion/heartbeat', { sessionId: s, windowId: `w-${i}` }))))
    expect((await liveSessions(shared.db, sharedProject)).filter((s) => s.startsWith('race-')).sort()).toEqual([...sessions].sort())

    // Session by session, both goodbyes at once, one through each core.
    for (const s of sessions) {
      const answers = await Promise.all(cores.map((c, i) => c.post('/api/ingestion/session-end', { sessionId: s, windowId: `w-${i}` })))
      expect(answers.map((r) => r.status)).toEqual([200, 200])
    }
    const rows = await shared.db.rows<{ session_id: string; ended: boolean }>(
      sql`select session_id, ended_at is not null as ended from sessions where session_id like 'race-%' order by session_id`,
    )
    expect(rows.filter((r) => !r.ended)).toEqual([])
    expect(rows).toHaveLength(sessions.length)
    expect(await shared.db.rows(sql`select 1 from presence where session_id like 'race-%'`)).toEqual([])
  })

  test('the last two goodbyes in overlapping commits, step by step: the second waits for the first, then ends the session', async () => {
    // Both commits run the sinks in the writer's order (by name). The first stops just before its
    // commit; the second must not decide "a window is still live" from the first's uncommitted state.
    const caller = { projectId: sharedProject, environment: 'production', monthlyLimit: null }
    const sinksInOrder = [presenceSink, sessionsSink].sort((a, b) => (a.name < b.name ? -1 : 1))
    const run = (tx: Orm, kind: 'beat' | 'end', windowId: string) => {
      const rows = presenceRows({ sessionId: 'step-1', windowId }, kind, caller, Date.now())
      return sinksInOrder.reduce<Promise<unknown>>(
        (done, sink) => done.then(() => (sink === presenceSink ? presenceSink.write(tx, rows.presence) : sessionsSink.write(tx, rows.sessions))),
        Promise.resolve(),
      )
    }
    await shared.db.orm.transaction((tx) => run(tx, 'beat', 'w-a'))
    await shared.db.orm.transaction((tx) => run(tx, 'beat', 'w-b'))

    let commitFirst!: () => void
    const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve))
    let firstReady!: () => void
    const firstAtCommit = new Promise<void>((resolve) => (firstReady = resolve))
    const first = shared.db.orm.transaction(async (tx) => {
      await run(tx, 'end', 'w-a')
      firstReady()
      await firstMayCommit
    })
    await firstAtCommit
    const second = shared.db.orm.transaction((tx) => run(tx, 'end', 'w-b'))
    await Bun.sleep(150)
    commitFirst()
    await Promise.all([first, second])
    expect(await shared.db.rows(sql`select ended_at is not null as ended from sessions where project_id = ${sharedProject} and session_id = 'step-1'`)).toEqual([{ ended: true }])
  })
})
