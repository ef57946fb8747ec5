import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { countedEvents, startCore, type TestCore } from '../../helpers/core'

// A custom event's `uuid` is the client's key for "stored once": ids that differ must be stored apart,
// the same id stored (and counted against the monthly limit) once, however it arrives.

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const storedUuids = async (sessionId: string) =>
  (await core.database.db.rows<{ uuid: string }>(sql`select uuid::text from events where session_id = ${sessionId} order by uuid`)).map((e) => e.uuid)

describe('custom event ids', () => {
  // Each differs from the others by a NUL or a lone surrogate alone, or a lone surrogate against the
  // U+FFFD that stands for it in UTF-8 (text cut inside an emoji, as String.slice leaves it).
  const ids = ['evt-1', 'evt-1\u0000', 'evt\u00001', 'evt-1\ud83d', 'evt-1\ude00', 'evt-1\ufffd', 'evt-1\ud83d\ude00', '0190a4b4-2222-7000-8000-000000000002', '0190a4b4-2222-7000-8000-000000000002\u0000']

  test('ids differing only by a NUL or a lone surrogate are different events: each stored, each resend once', async () => {
    for (let i = 0; i < 2; i++) {
      for (const uuid of ids) expect((await core.post('/api/ingestion/customEvent', { sessionId: 'ids-single', eventName: 'e', uuid })).status).toBe(200)
    }
    expect(new Set(await storedUuids('ids-single')).size).toBe(ids.length)
    expect(await storedUuids('ids-single')).toHaveLength(ids.length)
  })

  test('the same in a batch, and an event sent alone and then in a batch is one event', async () => {
    const events = ids.map((uuid) => ({ eventName: 'e', uuid }))
    for (let i = 0; i < 2; i++) {
      const res = await core.post('/api/ingestion/customEvent/batch', { sessionId: 'ids-single', events })
      expect(await res.json()).toMatchObject({ success: true, accepted: ids.length })
    }
    expect(await storedUuids('ids-single')).toHaveLength(ids.length)
  })

  test('the same uuid twice in one batch: both committed (accepted 2), stored and counted once, and once more when the batch is resent', async () => {
    const before = await countedEvents(core)
    const batch = { sessionId: 'ids-twice', events: [{ eventName: 'a', uuid: 'twice-1' }, { eventName: 'a', uuid: 'twice-1' }, { eventName: 'b', uuid: '0190a4b4-5555-7000-8000-000000000005' }, { eventName: 'b', uuid: '0190A4B4555570008000000000000005' }] }
    expect(await (await core.post('/api/ingestion/customEvent/batch', batch)).json()).toMatchObject({ success: true, accepted: 4 })
    expect(await storedUuids('ids-twice')).toHaveLength(2)
    expect((await countedEvents(core)) - before).toBe(2)
    expect(await (await core.post('/api/ingestion/customEvent/batch', batch)).json()).toMatchObject({ success: true, accepted: 4 })
    expect(await storedUuids('ids-twice')).toHaveLength(2)
    expect((await countedEvents(core)) - before).toBe(2)
  })
})
