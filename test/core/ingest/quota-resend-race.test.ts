import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { countedEvents, startCore, startCoreBeside, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

// A resend that commits at the same instant on another core (the load balancer sent the retry
// elsewhere while the first send was still committing) is stored once and must be counted once: each
// commit counts what its own insert (or COPY) stored, and the second inserter of a key waits for the
// first's commit on the unique index, so neither takes the other's row for its own.
describe.skipIf(engine !== 'postgres')('two cores: a resend committing at once on both counts once', () => {
  let first: TestCore
  let second: TestCore
  beforeAll(async () => {
    first = await startCore()
    second = await startCoreBeside(first)
  })
  afterAll(async () => {
    await second?.close()
    await first?.close()
  })

  const stored = async (table: 'events' | 'replay_chunks') => (await first.database.db.rows<{ n: number }>(sql`select count(*)::int as n from ${sql.raw(table)}`))[0].n
  /**
   * The same body through both cores at once, `times` times in all; `apart` gives each send a
   * session and end user of its own (an event's key is its uuid alone), so that nothing but the
   * event's own key orders the commits (a session's row, locked first, would queue them).
   */
  const atOnce = (path: string, body: object, times = 2, apart = false) =>
    Promise.all(
      Array.from({ length: times }, (_, i) => {
        const sent = apart ? { ...body, sessionId: `${(body as { sessionId: string }).sessionId}-${i}`, endUserId: `u-${crypto.randomUUID()}` } : body
        return (i % 2 ? second : first).post(`/api/ingestion${path}`, sent, { key: first.key }).then((r) => r.status)
      }),
    )
  const rounds = 30

  test('custom events, of a named end user (copied) and of the session\'s (inserted), one item or two', async () => {
    const [events, counted] = [await stored('events'), await countedEvents(first)]
    for (let round = 0; round < rounds; round++) {
      const named = { sessionId: `named-${round}`, events: [{ eventName: 'a', uuid: crypto.randomUUID() }, { eventName: 'b', uuid: crypto.randomUUID() }] }
      const ofSession = { sessionId: `anon-${round % 4}`, events: [{ eventName: 'c', uuid: crypto.randomUUID() }] }
      const statuses = await Promise.all([atOnce('/customEvent/batch', named, 3, true), atOnce('/customEvent/batch', ofSession)])
      expect(statuses.flat()).toEqual([200, 200, 200, 200, 200])
    }
    expect((await stored('events')) - events).toBe(rounds * 3)
    expect((await countedEvents(first)) - counted).toBe(rounds * 3)
  })

  test('replay chunks', async () => {
    const [chunks, counted] = [await stored('replay_chunks'), await countedEvents(first)]
    for (let round = 0; round < rounds; round++) {
      const chunk = { sessionId: `replay-${round}`, windowId: 'w', seq: 0, events: [{ type: 4, timestamp: Date.now() - 1_000, data: { href: 'https://x.test/', width: 800, height: 600 } }] }
      expect(await atOnce('/events', chunk)).toEqual([200, 200])
    }
    expect((await stored('replay_chunks')) - chunks).toBe(rounds)
    expect((await countedEvents(first)) - counted).toBe(rounds)
  })
})
