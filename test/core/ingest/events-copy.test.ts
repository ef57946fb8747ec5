import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { postgresDatabase } from '@sightline/core/db'
import type { EventRow } from '@sightline/core/ingest/events/service'
import { eventsSink } from '@sightline/core/ingest/events/store'
import type { LogRow } from '@sightline/core/ingest/logs/service'
import { logsSink } from '@sightline/core/ingest/logs/store'
import { createQuota } from '@sightline/core/ingest/quota'
import type { Sink, SinkRows } from '@sightline/core/sink'
import { createWriter, type Writer } from '@sightline/core/writer'
import { holdCommits, proxiedTestDatabase } from '../../helpers/breakable-database'
import { startCore, type TestCore } from '../../helpers/core'
import { engine } from '../../helpers/database'

// The writer COPYs custom events (Sink.copy) and falls back to the insert when a batch holds an event
// stored already. Either way, what is stored and what is counted against the quota must be the same.

/** What Postgres keeps of a text: NUL dropped, a lone surrogate (text cut inside an emoji) as U+FFFD. */
const asStored = (text: string) => text.replaceAll('\0', '').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')

const until = async (condition: () => Promise<boolean>, what: string) => {
  const deadline = Date.now() + 5_000
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await Bun.sleep(10)
  }
}

describe('custom events by COPY', () => {
  let core: TestCore
  let writer: Writer
  /** Batches the events sink's insert was given: only those the COPY could not store. */
  let inserted: EventRow[][] = []
  const spied: Sink<EventRow> = { ...eventsSink, write: (tx, rows) => (inserted.push(rows), eventsSink.write(tx, rows)) }
  /** The insert alone, as a batch holding a resend is stored. */
  const insertOnly: Sink<EventRow> = { name: 'events', write: eventsSink.write }
  beforeAll(async () => {
    core = await startCore()
    writer = createWriter(core.database.db, core.log, { gate: createQuota().gate })
  })
  afterAll(async () => {
    await writer.close()
    await core.close()
  })

  const event = (overrides: Partial<EventRow> = {}): EventRow => ({
    projectId: core.project.projectId,
    uuid: Bun.randomUUIDv7(),
    environment: 'development',
    sessionId: 'copy',
    endUserId: null,
    eventName: 'e',
    properties: null,
    timestamp: Date.now(),
    ...overrides,
  })
  const store = (...writes: SinkRows[]) =>
    writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: writes.reduce((n, w) => n + w.rows.length, 0), bytes: 100, writes })
  const usage = async () => Number((await core.database.db.rows<{ n: string }>(sql`select coalesce(sum(events), 0)::text as n from usage_counters`))[0].n)
  const timesStored = async (rows: EventRow[]) => {
    const stored = await core.database.db.rows<{ uuid: string; n: number }>(
      sql`select uuid::text, count(*)::int as n from events where uuid::text in (${sql.join(rows.map((r) => sql`${r.uuid}`), sql`, `)}) group by uuid`,
    )
    return rows.map((row) => stored.find((s) => s.uuid === row.uuid)?.n ?? 0)
  }
  test('new events are copied; a batch holding one stored already goes through the insert, which counts the resend once', async () => {
    inserted = []
    const before = await usage()
    const [a, b, c] = [event({ eventName: 'a' }), event({ eventName: 'b' }), event({ eventName: 'c' })]
    await store({ sink: spied, rows: [a, b] })
    expect(inserted).toHaveLength(0)
    await store({ sink: spied, rows: [b, c] })
    expect(inserted.at(-1)?.map((row) => row.eventName)).toEqual(['b', 'c'])
    expect(await timesStored([a, b, c])).toEqual([1, 1, 1])
    expect((await usage()) - before).toBe(3)
  })

  test('rows whose COPY text is over what the database copies well go by the insert (the embedded database: 256 KB)', async () => {
    inserted = []
    const large = { text: 'x'.repeat(1_000) }
    const small = Array.from({ length: 10 }, () => event({ properties: large }))
    const many = Array.from({ length: 300 }, () => event({ properties: large }))
    await store({ sink: spied, rows: small })
    expect(inserted).toHaveLength(0)
    await store({ sink: spied, rows: many })
    expect(inserted).toEqual(engine === 'embedded' ? [many] : [])
    expect(await timesStored([...small, ...many])).toEqual([...small, ...many].map(() => 1))
  })

  test('a resend among another sink’s rows of the same commit is counted back before the commit: the events then go through the insert', async () => {
    inserted = []
    const before = await usage()
    const log: LogRow = { projectId: core.project.projectId, contentHash: crypto.randomUUID(), sessionId: 'copy', endUserId: null, level: 'info', message: 'once', stack: null, url: null, userAgent: null, timestamp: Date.now() }
    await store({ sink: logsSink, rows: [log] })
    const events = [event(), event()]
    await store({ sink: spied, rows: events }, { sink: logsSink, rows: [log] })
    expect(inserted).toEqual([events])
    expect(await timesStored(events)).toEqual([1, 1])
    expect((await usage()) - before).toBe(3)
  })

  test('a sink that sends a statement after another’s answer shares the commit: the COPY follows its last one', async () => {
    inserted = []
    const steps: string[] = []
    const twoSteps: Sink<string> = {
      name: 'two_steps',
      async write(tx, rows) {
        const [first] = await core.database.db.rows<{ n: string }>(sql`select ${rows[0]}::text as n`, tx)
        steps.push(first.n)
        const [second] = await core.database.db.rows<{ n: string }>(sql`select ${first.n} || ' then' as n`, tx)
        steps.push(second.n)
      },
    }
    const events = [event(), event()]
    await store({ sink: spied, rows: events }, { sink: twoSteps, rows: ['first'] })
    expect(steps).toEqual(['first', 'first then'])
    expect(inserted).toHaveLength(0)
    expect(await timesStored(events)).toEqual([1, 1])
  })

  test('the COPY stores every value exactly as the insert does: text, JSON, NULL against empty, timestamps to the microsecond', async () => {
    const texts = ['tab\there', 'line\nbreak', 'cr\rlf', 'C:\\dir\\', '\\.', '\\N', '', '"double" \'single\'', 'ünïcødé 日本語', '🎉👩‍💻', 'nul\0byte', 'cut \ud83d']
    let seed = 11
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647)
    // Whole and fractional milliseconds, down to the rounding of to_timestamp (float8 seconds).
    const times = [0, 1, 0.0005, 0.0015, 946_684_800_000, 1_700_000_000_123, 1_700_000_000_123.4567, 1_700_000_000_999.9995, Date.now()]
    for (let i = 0; i < 300; i++) {
      const digits = 10 ** Math.floor(random() * 5)
      times.push(Math.round(random() * 1.8e12 * digits) / digits)
    }
    const values = times.map((timestamp, i) => {
      const text = texts[i % texts.length]
      return {
        eventName: `${i} ${text}`,
        endUserId: i % 3 === 0 ? null : i % 3 === 1 ? '' : text,
        properties: i % 4 === 0 ? null : { text, n: random() * 1e6, nested: { list: [text, i, true, null] }, '': text },
        timestamp,
      }
    })
    const copied = values.map((v) => event(v))
    const insertedRows = values.map((v) => event(v))
    await store({ sink: eventsSink, rows: copied })
    await store({ sink: insertOnly, rows: insertedRows })
    const read = (rows: EventRow[]) =>
      core.database.db.rows<Record<string, unknown>>(sql`
        select event_name, convert_to(event_name, 'UTF8') as name_bytes, end_user_id, properties::text as properties,
          properties is null as no_properties, (extract(epoch from timestamp) * 1000000)::bigint::text as micros
        from events where uuid::text in (${sql.join(rows.map((r) => sql`${r.uuid}`), sql`, `)})
        order by uuid`)
    expect(await read(copied)).toEqual(await read(insertedRows))
    expect((await read(copied)).map((r) => r.event_name)).toEqual(values.map((v) => asStored(v.eventName)))
  })

  test('a resend racing its original in another commit is stored and counted once', async () => {
    const before = await usage()
    const body = { sessionId: 'race', endUserId: 'race-user', events: Array.from({ length: 20 }, (_, i) => ({ eventName: `e${i}`, uuid: Bun.randomUUIDv7() })) }
    const send = () => core.post('/api/ingestion/customEvent/batch', body).then((res) => res.status)
    let statuses: number[]
    if (engine === 'postgres') {
      // Both commits wait on the usage counters until released, then go on together. (Two
      // connections: one holds the lock, the other looks.)
      const admin = postgres(core.database.url!, { max: 2, onnotice: () => {} })
      const waiting = async () =>
        (await admin<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'sightline' and wait_event_type = 'Lock'`)[0].n
      try {
        const commits = await holdCommits(admin)
        const first = send()
        await until(async () => (await waiting()) === 1, 'the first commit waits')
        const second = send()
        await until(async () => (await waiting()) === 2, 'the second commit waits too')
        await commits.release()
        statuses = await Promise.all([first, second])
      } finally {
        await admin.end()
      }
    } else statuses = await Promise.all([send(), send()])
    expect(statuses).toEqual([200, 200])
    const stored = await core.database.db.rows<{ n: number }>(
      sql`select count(*)::int as n from events where uuid::text in (${sql.join(body.events.map((e) => sql`${e.uuid}`), sql`, `)})`,
    )
    expect(stored).toEqual([{ n: 20 }])
    expect((await usage()) - before).toBe(20)
  })
})

describe('custom events over HTTP', () => {
  test('awkward text round-trips byte for byte in names and properties (NUL dropped, a lone surrogate as U+FFFD)', async () => {
    const core = await startCore()
    try {
      const texts = ['tab\there', 'line\nbreak\r\n', 'C:\\dir\\', '\\.\n\\N', '"double" \'single\'', 'ünïcødé 日本語 🎉👩‍💻', 'nul\0byte', 'cut \ud83d']
      const events = texts.map((text) => ({ eventName: `name ${text}`, eventProperties: { text, list: [text] }, uuid: crypto.randomUUID() }))
      expect((await core.post('/api/ingestion/customEvent/batch', { sessionId: 'awkward', endUserId: 'awkward-user', events })).status).toBe(200)
      const rows = await core.database.db.rows<{ uuid: string; event_name: string; properties: string }>(
        sql`select uuid::text, event_name, properties::text as properties from events where session_id = 'awkward'`,
      )
      for (const sent of events) {
        const row = rows.find((r) => r.uuid === sent.uuid)!
        expect(row.event_name).toBe(asStored(sent.eventName))
        expect(JSON.parse(row.properties)).toEqual({ text: asStored(sent.eventProperties.text), list: [asStored(sent.eventProperties.text)] })
      }
    } finally {
      await core.close()
    }
  })
})

describe.skipIf(engine !== 'postgres')('custom events by COPY, the connection lost', () => {
  /** A core whose connections pass a proxy that can cut them, and a connection of the test's own. */
  async function breakableCore() {
    const { database, proxy, url } = await proxiedTestDatabase()
    const db = postgresDatabase(url)
    const core = await startCore({ database: { db, close: () => db.close() }, writer: { failFastMs: 100 } })
    const admin = postgres(database.url!, { max: 2, onnotice: () => {} })
    const activity = async (condition: string) =>
      (await admin.unsafe<{ n: number }[]>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and ${condition}`))[0].n
    return {
      core,
      admin,
      proxy,
      activity,
      /** Core's sessions ended (the server found the client gone), and nothing of `uuids` was stored or counted. */
      async expectNothingStored(uuids: string[], stored: { uuid: string; event_name: string }[] = []) {
        await until(async () => (await activity(`application_name = 'sightline'`)) === 0, 'the server ends the sessions')
        expect([...(await admin`select uuid::text, event_name from events where uuid in ${admin(uuids)}`)]).toEqual(stored)
        expect([...(await admin`select coalesce(sum(events), 0)::int as n from usage_counters`)]).toEqual([{ n: 0 }])
      },
      /** The server is reachable again: core stores the next request. */
      async expectRecovery(uuid: string) {
        proxy.resume()
        await until(async () => (await core.post('/api/ingestion/customEvent/batch', batch([uuid]))).status === 200, 'core stores again')
        expect([...(await admin`select count(*)::int as n from events where uuid = ${uuid}`)]).toEqual([{ n: 1 }])
      },
      async close() {
        await core.close().catch(() => {})
        await admin.end()
        proxy.close()
        await database.close()
      },
    }
  }
  // Naming the end user, as the tracker does: the events of a body naming none are not copied (sessionEventsSink).
  const batch = (uuids: string[]) => ({ sessionId: 'lost', endUserId: 'lost-user', events: uuids.map((uuid) => ({ eventName: 'mine', uuid })) })
  const expect503 = async (answer: Response) => {
    expect(answer.status).toBe(503)
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await answer.json()).error.code).toBe('storage_unavailable')
  }

  test('lost while the COPY waits on a row: 503 with Retry-After, nothing of the request stored, and the next request is stored', async () => {
    const setup = await breakableCore()
    try {
      const [taken, fresh] = [Bun.randomUUIDv7(), Bun.randomUUIDv7()]
      // Another commit stores one of the request's events meanwhile: the COPY waits on that row.
      // (Looked at from another connection: a transaction sees the activity of its first look.)
      const answer = await setup.admin.begin(async (tx) => {
        await tx`insert into events (project_id, uuid, environment, session_id, event_name, timestamp)
                 values (${setup.core.project.projectId}, ${taken}, 'development', 'other', 'theirs', now())`
        const pending = setup.core.post('/api/ingestion/customEvent/batch', batch([taken, fresh]))
        await until(async () => (await setup.activity(`query like 'savepoint copy_in; copy events%' and wait_event_type = 'Lock'`)) === 1, 'the COPY waits')
        setup.proxy.stop()
        return pending
      })
      await expect503(answer)
      await setup.expectNothingStored([taken, fresh], [{ uuid: taken, event_name: 'theirs' }])
      await setup.expectRecovery(fresh)
    } finally {
      await setup.close()
    }
  })

  test('lost while the statements before the COPY wait: 503, nothing stored, and the next request is stored', async () => {
    const setup = await breakableCore()
    try {
      // Commits before, so that the connection has its statements prepared and sends them all at once.
      for (let i = 0; i < 3; i++) expect((await setup.core.post('/api/ingestion/customEvent/batch', batch([Bun.randomUUIDv7()]))).status).toBe(200)
      await setup.admin`delete from events`
      await setup.admin`delete from usage_counters`
      const uuids = [Bun.randomUUIDv7(), Bun.randomUUIDv7()]
      const commits = await holdCommits(setup.admin)
      const pending = setup.core.post('/api/ingestion/customEvent/batch', batch(uuids))
      await until(async () => (await setup.activity(`application_name = 'sightline' and wait_event_type = 'Lock'`)) === 1, 'the commit waits')
      setup.proxy.stop()
      await expect503(await pending)
      await commits.release()
      await setup.expectNothingStored(uuids)
      await setup.expectRecovery(uuids[0])
    } finally {
      await setup.close()
    }
  })
})
