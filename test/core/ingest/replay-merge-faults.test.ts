import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { mergeSessionTouches, type SessionTouch } from '@sightline/core/ingest/sessions/service'
import { startCore, type TestCore } from '../../helpers/core'

// Faults found in a hunt over /events (replay ingestion and what it records of the session).

let core: TestCore
beforeAll(async () => {
  // A writer that waits for company, so that requests sent together share one commit.
  core = await startCore({ writer: { lingerMs: 500, concurrency: 1 } })
})
afterAll(() => core.close())

const t0 = Date.now() - 600_000
const meta = (timestamp: number, href: string) => ({ type: 4, timestamp, data: { href, width: 800, height: 600 } })
const full = (timestamp: number) => ({ type: 2, timestamp, data: { node: { type: 0, childNodes: [], id: 1 }, initialOffset: { left: 0, top: 0 } } })
const move = (timestamp: number) => ({ type: 3, timestamp, data: { source: 1, positions: [{ x: 1, y: 1, id: 1, timeOffset: 0 }] } })
const send = (body: object) => core.post('/api/ingestion/events', body)
const sessionOf = async (sessionId: string) =>
  (
    await core.database.db.rows<{ entry_url: string | null; entry_at: string | null; sdk_version: string | null }>(sql`
      select entry_url, (extract(epoch from entry_at) * 1000)::bigint::text as entry_at, sdk_version from sessions where session_id = ${sessionId}`)
  )[0]

describe('/events: the entry URL', () => {
  test("a meta event whose href is NUL characters alone does not hide a real page's meta event later in the same chunk", async () => {
    const res = await send({ sessionId: 'mf-nul-href', events: [meta(t0, '\u0000'), meta(t0 + 5, 'https://shop.test/real'), full(t0 + 6)] })
    expect(await res.json()).toEqual({ success: true, accepted: 3, dropped: 0, endUserId: expect.any(String) })
    expect(await sessionOf('mf-nul-href')).toMatchObject({ entry_url: 'https://shop.test/real', entry_at: String(t0 + 5) })
  })
})

describe('/events: the SDK version', () => {
  test('chunks sharing a commit leave the session the SDK version of the one sent last, as chunks in two commits do', async () => {
    // A page reloaded onto a new release: its first chunk under the old SDK, the next under the new.
    for (const [version, at] of [['1.0.0', t0], ['2.0.0', t0 + 1_000]] as const) {
      expect((await send({ sessionId: 'mf-sdk-apart', sdkVersion: version, events: [move(at)] })).status).toBe(200)
    }
    expect((await sessionOf('mf-sdk-apart')).sdk_version).toBe('2.0.0')
    // Sent one after the other within the writer's wait: one commit, in the order sent.
    const first = send({ sessionId: 'mf-sdk-together', sdkVersion: '1.0.0', events: [move(t0)] })
    await Bun.sleep(50)
    const together = await Promise.all([first, send({ sessionId: 'mf-sdk-together', sdkVersion: '2.0.0', events: [move(t0 + 1_000)] })])
    expect(together.map((res) => res.status)).toEqual([200, 200])
    expect((await sessionOf('mf-sdk-together')).sdk_version).toBe('2.0.0')
  })
})

describe('session touches merged in one commit', () => {
  const touch = (firstAt: number, sdkVersion: string | null): SessionTouch => ({ projectId: 'p', sessionId: 's', environment: 'production', endUserId: null, firstAt, lastAt: firstAt, sdkVersion })
  test('take the SDK version of the touch that came last (when it has one), as the sessions sink does across commits', () => {
    expect(mergeSessionTouches([touch(1_000, '1.0.0'), touch(2_000, '2.0.0')])[0].sdkVersion).toBe('2.0.0')
    // Events recorded earlier but sent later (an outbox drained after a reload) carry the SDK that sent them.
    expect(mergeSessionTouches([touch(2_000, '1.0.0'), touch(1_000, '2.0.0')])[0].sdkVersion).toBe('2.0.0')
    expect(mergeSessionTouches([touch(1_000, '1.0.0'), touch(2_000, null)])[0].sdkVersion).toBe('1.0.0')
  })
})
