import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import {
  ACTIVITY_RESOLUTION_MS,
  knownAfter,
  MAX_WINDOWS_PER_SESSION,
  mergeSessionTouches,
  sessionTouchIsKnown,
  type SessionTouch,
} from '@sightline/core/ingest/sessions/service'
import { sessionTouches } from '@sightline/core/ingest/sessions/touch'
import { KNOWN_WINDOWS_HELD, knownRows } from '@sightline/core/ingest/sessions/store'
import type { Caller } from '@sightline/core/http/auth'
import { groupingCores, type TestCore } from '../../helpers/core'

// Named so that the order they come in is not their sorted order: the first ones kept are the first sent.
const windowsOf = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${String(999 - i).padStart(3, '0')}`)
const OVER = MAX_WINDOWS_PER_SESSION + 20

describe('the windows a session keeps, before any database', () => {
  const touch = (windowIds: string[], at = 10_000): SessionTouch => ({ projectId: 'p', sessionId: 's', environment: 'e', endUserId: null, firstAt: at, lastAt: at, windowIds })

  test('touches of one commit merge to the first windows, each once', () => {
    const windows = windowsOf('m', OVER)
    const [merged] = mergeSessionTouches([touch([windows[0], windows[0]]), ...windows.map((w) => touch([w]))])
    expect(merged.windowIds).toEqual(windows.slice(0, MAX_WINDOWS_PER_SESSION))
  })

  test("a request's sightings name at most the windows a session keeps", () => {
    const caller = { projectId: 'p', environment: 'e' } as Caller
    const windows = windowsOf('r', OVER)
    const [session] = sessionTouches(caller, windows.map((windowId, i) => ({ sessionId: 's', endUserId: null, at: 10_000 + i, windowId }))).sessions
    expect(session.windowIds).toEqual(windows.slice(0, MAX_WINDOWS_PER_SESSION))
  })

  test('a cached session with all its windows takes a new one as nothing new, and keeps no more of them', () => {
    const windows = windowsOf('k', OVER)
    const almost = knownAfter(undefined, touch(windows.slice(0, MAX_WINDOWS_PER_SESSION - 1)))
    expect(sessionTouchIsKnown(touch([windows[MAX_WINDOWS_PER_SESSION]]), almost)).toBe(false)
    const full = knownAfter(almost, touch(windows.slice(MAX_WINDOWS_PER_SESSION - 1)))
    expect([...full.windowIds]).toEqual(windows.slice(0, MAX_WINDOWS_PER_SESSION))
    expect(sessionTouchIsKnown(touch([windows[OVER - 1]]), full)).toBe(true)
    expect(sessionTouchIsKnown(touch([windows[OVER - 1]], 10_000 + ACTIVITY_RESOLUTION_MS + 1), full)).toBe(false)
  })

  test("the cache of committed sessions holds a bounded number of window ids, not only of sessions", () => {
    const cache = knownRows<SessionTouch>()
    const keyOf = (t: SessionTouch) => t.sessionId
    const commit = (touches: SessionTouch[]) => {
      cache.wrote(touches, touches)
      cache.committed(touches, keyOf, (t, before) => knownAfter(before, t))
    }
    commit([{ ...touch(['only']), sessionId: 'first' }])
    // Full sessions, enough to pass the bound on windows, far under the cache's count of rows.
    const sessionsToFill = KNOWN_WINDOWS_HELD / MAX_WINDOWS_PER_SESSION
    for (let i = 0; i < sessionsToFill; i++) commit([{ ...touch(windowsOf(`s${i}`, MAX_WINDOWS_PER_SESSION)), sessionId: `full-${i}` }])
    expect(cache.get('first')).toBeDefined()
    commit([{ ...touch(['one more']), sessionId: 'last' }])
    expect(cache.get('first')).toBeUndefined()
    expect(cache.get('last')).toBeDefined()
  })
})

describe('the windows a session keeps, as stored', () => {
  const cores = groupingCores()

  const t0 = Date.now() - 600_000
  const move = (timestamp: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x: 1, y: 1, id: 1, timeOffset: 0 }] } })
  const sendChunk = (via: TestCore, sessionId: string, windowId: string, at: number) =>
    via.post('/api/ingestion/events', { sessionId, windowId, events: [move(at)] }).then((res) => expect(res.status).toBe(200))
  const sessionRow = async (sessionId: string) =>
    (
      await cores.database.db.rows<{ window_ids: string[]; version: string; last_ms: string }>(sql`
        select window_ids, xmin::text || ctid::text as version, (extract(epoch from last_activity_at) * 1000)::bigint::text as last_ms
        from sessions where session_id = ${sessionId}`)
    )[0]

  test('a session named with more windows than it keeps, request by request, stores the first ones in the order they came', async () => {
    const windows = windowsOf('w', OVER)
    // Each a second apart, so that each is written for its activity whatever the windows.
    for (const [i, windowId] of windows.entries()) await sendChunk(cores.core, 'many-windows', windowId, t0 + i * 2 * ACTIVITY_RESOLUTION_MS)
    const row = await sessionRow('many-windows')
    expect(row.window_ids).toEqual(windows.slice(0, MAX_WINDOWS_PER_SESSION))
    expect(Number(row.last_ms)).toBe(t0 + (OVER - 1) * 2 * ACTIVITY_RESOLUTION_MS)
  })

  test('a touch naming a new window of a full session writes nothing; with later activity, it moves the times and adds no window', async () => {
    const windows = windowsOf('f', MAX_WINDOWS_PER_SESSION)
    for (const [i, windowId] of windows.entries()) await sendChunk(cores.core, 'full-windows', windowId, t0 + i)
    const full = await sessionRow('full-windows')
    expect(full.window_ids).toEqual(windows)

    await sendChunk(cores.core, 'full-windows', 'one-too-many', Number(full.last_ms) + 1)
    expect(await sessionRow('full-windows')).toEqual(full)

    const later = Number(full.last_ms) + 5 * ACTIVITY_RESOLUTION_MS
    await sendChunk(cores.core, 'full-windows', 'two-too-many', later)
    expect(await sessionRow('full-windows')).toMatchObject({ window_ids: windows, last_ms: String(later) })
  })

  test('windows named in one commit, some to an existing session, fill it to the bound and no further', async () => {
    await sendChunk(cores.grouping, 'one-commit', 'first', t0)
    const windows = windowsOf('c', OVER)
    await Promise.all(windows.map((windowId) => sendChunk(cores.grouping, 'one-commit', windowId, t0 + 10)))
    const [{ commits }] = await cores.database.db.rows<{ commits: number }>(
      sql`select count(distinct xmin::text)::int as commits from replay_chunks where session_id = 'one-commit' and window_id <> 'first'`,
    )
    expect(commits).toBe(1)
    const row = await sessionRow('one-commit')
    expect(row.window_ids).toHaveLength(MAX_WINDOWS_PER_SESSION)
    expect(row.window_ids[0]).toBe('first')
    expect(new Set(row.window_ids).size).toBe(MAX_WINDOWS_PER_SESSION)
    expect(windows).toEqual(expect.arrayContaining(row.window_ids.slice(1)))
  })
})
