import { afterAll, beforeAll, beforeEach, describe, expect, setSystemTime, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ApiError } from '@sightline/core/errors'
import { createLogger } from '@sightline/core/log'
import type { Sink } from '@sightline/core/sink'
import { createWriter, type WriteRequest, type WriterOptions } from '@sightline/core/writer'
import { createTestDatabase, type TestDatabase } from '../helpers/database'

// The writer against real SQL: a scratch table, real transactions, real data errors.
let database: TestDatabase
const log = createLogger('silent')

beforeAll(async () => {
  database = await createTestDatabase()
  await database.db.rows(sql`create table writer_probe (id text primary key, tx bigint not null, value uuid)`)
})
afterAll(() => database.close())
beforeEach(() => database.db.rows(sql`truncate writer_probe`))

interface ProbeRow {
  id: string
  value?: string
}

/** Inserts rows with the id of the transaction that wrote them; `hold` lets a test stop a commit midway. */
function probeSink(hold?: () => Promise<void>): Sink<ProbeRow> & { calls: number } {
  return {
    name: 'writer_probe',
    calls: 0,
    async write(tx, rows) {
      this.calls++
      for (const row of rows) {
        await tx.execute(sql`insert into writer_probe (id, tx, value) values (${row.id}, txid_current(), ${row.value ?? null}::uuid) on conflict do nothing`)
      }
      await hold?.()
    },
  }
}

const request = (sink: Sink<ProbeRow>, ...rows: ProbeRow[]): WriteRequest => ({
  projectId: '00000000-0000-0000-0000-000000000000',
  monthlyLimit: null,
  items: rows.length,
  bytes: 100,
  writes: [{ sink, rows }],
})

const stored = async () => (await database.db.rows<{ id: string; tx: string }>(sql`select id, tx from writer_probe order by id`))
const writer = (options: WriterOptions = {}) => createWriter(database.db, log, { concurrency: 1, ...options })

describe('group commit', () => {
  test('answers a write only after its rows are committed', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const sink = probeSink(() => held)
    const w = writer()
    let answered = false
    const write = w.write(request(sink, { id: 'a' })).then(() => (answered = true))
    await Bun.sleep(50)
    expect(answered).toBe(false)
    expect(w.stats().inflight).toBe(1)
    release()
    await write
    expect(answered).toBe(true)
    expect((await stored()).map((r) => r.id)).toEqual(['a'])
  })

  test('coalesces concurrent requests into few transactions, each row once', async () => {
    const sink = probeSink()
    const w = writer()
    await Promise.all(Array.from({ length: 300 }, (_, i) => w.write(request(sink, { id: `r${String(i).padStart(3, '0')}` }))))
    const rows = await stored()
    expect(rows).toHaveLength(300)
    const transactions = new Set(rows.map((r) => r.tx)).size
    expect(transactions).toBeLessThanOrEqual(10)
    expect(sink.calls).toBe(transactions)
  })

  test('a batch closes at maxBatchRows', async () => {
    const sink = probeSink()
    const w = writer({ maxBatchRows: 50 })
    await Promise.all(Array.from({ length: 200 }, (_, i) => w.write(request(sink, { id: `b${i}` }))))
    expect(new Set((await stored()).map((r) => r.tx)).size).toBeGreaterThanOrEqual(4)
  })

  test('close() commits what is queued, then refuses', async () => {
    const sink = probeSink()
    const w = writer({ lingerMs: 50 })
    const writes = [w.write(request(sink, { id: 'c1' })), w.write(request(sink, { id: 'c2' }))]
    await w.close()
    await Promise.all(writes)
    expect(await stored()).toHaveLength(2)
    await expect(w.write(request(sink, { id: 'c3' }))).rejects.toMatchObject({ code: 'storage_unavailable' })
  })
})

describe('bounds and failures', () => {
  test('a full queue answers overloaded at once, with Retry-After', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const sink = probeSink(() => held)
    const w = writer({ maxQueuedRows: 10 })
    const first = w.write(request(sink, { id: 'q-inflight' }))
    await Bun.sleep(20) // the first is now in flight; the queue is empty
    const queued = Array.from({ length: 10 }, (_, i) => w.write(request(sink, { id: `q${i}` })))
    const refused = await w.write(request(sink, { id: 'q-over' })).catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ code: 'overloaded', status: 503, details: { retryAfterSeconds: 1 } })
    expect(w.stats()).toEqual({ queued: 10, inflight: 1 })
    release()
    await Promise.all([first, ...queued])
    expect(await stored()).toHaveLength(11)
  })

  test('a failed commit fails every request in it with storage_unavailable, then fails fast for a while', async () => {
    let now = 1_000_000
    let broken = true
    const sink: Sink<ProbeRow> = {
      name: 'flaky',
      async write(tx, rows) {
        if (broken) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' })
        await probeSink().write(tx, rows)
      },
    }
    const w = writer({ failFastMs: 1000, retryAfterSeconds: 4, now: () => now })
    const results = await Promise.allSettled([w.write(request(sink, { id: 'f1' })), w.write(request(sink, { id: 'f2' }))])
    for (const result of results) {
      expect(result.status).toBe('rejected')
      expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'storage_unavailable', details: { retryAfterSeconds: 4 } })
    }
    broken = false
    now += 500
    await expect(w.write(request(sink, { id: 'f3' }))).rejects.toMatchObject({ code: 'storage_unavailable' })
    now += 600
    await w.write(request(sink, { id: 'f4' }))
    expect((await stored()).map((r) => r.id)).toEqual(['f4'])
  })

  test('failing fast lasts failFastMs whatever the system clock does meanwhile: set back an hour, the writer does not refuse for the hour', async () => {
    let broken = true
    const sink: Sink<ProbeRow> = {
      name: 'flaky-clock',
      async write(tx, rows) {
        if (broken) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' })
        await probeSink().write(tx, rows)
      },
    }
    const w = writer({ failFastMs: 200 })
    await expect(w.write(request(sink, { id: 'c1' }))).rejects.toMatchObject({ code: 'storage_unavailable' })
    broken = false
    // NTP stepping back a clock that ran fast, a virtual machine resumed from a snapshot.
    setSystemTime(new Date(Date.now() - 3_600_000))
    try {
      await Bun.sleep(300)
      await w.write(request(sink, { id: 'c2' }))
    } finally {
      setSystemTime()
    }
    expect((await stored()).map((r) => r.id)).toEqual(['c2'])
  })

  test('a commit that hangs is answered 503 after commitTimeoutMs, not left waiting', async () => {
    // Stuck for a second, then it lands: the client was told 503 and will retry, which is a no-op.
    const slow = probeSink(() => Bun.sleep(1000))
    const w = writer({ commitTimeoutMs: 100 })
    const started = performance.now()
    await expect(w.write(request(slow, { id: 'h1' }))).rejects.toMatchObject({ code: 'storage_unavailable' })
    expect(performance.now() - started).toBeLessThan(900)
    await Bun.sleep(1200)
    expect((await stored()).map((r) => r.id)).toEqual(['h1'])
  })

  test('a row the database refuses fails only its own request; the rest of the batch is stored', async () => {
    const sink = probeSink()
    const w = writer({ lingerMs: 20 })
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        w.write(request(sink, { id: `d${String(i).padStart(2, '0')}`, value: i === 7 ? 'not-a-uuid' : crypto.randomUUID() })),
      ),
    )
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [[i, r.reason.code]] : []))
    expect(failed).toEqual([[7, 'validation_failed']])
    expect((results[7] as PromiseRejectedResult).reason.details).toMatchObject({ path: '/' })
    expect(await stored()).toHaveLength(19)
  })

  test('a row over a database limit (an index entry too large) is refused like bad data: only its request fails, and the writer stays open', async () => {
    const sink = probeSink()
    const w = writer({ lingerMs: 20 })
    // Incompressible text far over a btree entry's maximum: Postgres answers 54000, program limit exceeded.
    const huge = Buffer.from(crypto.getRandomValues(new Uint8Array(12_000))).toString('base64')
    const results = await Promise.allSettled([w.write(request(sink, { id: 'l1' })), w.write(request(sink, { id: huge })), w.write(request(sink, { id: 'l2' }))])
    expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(['ok', 'validation_failed', 'ok'])
    await w.write(request(sink, { id: 'l3' }))
    expect((await stored()).map((r) => r.id)).toEqual(['l1', 'l2', 'l3'])
  })

  /** Writes probe rows; a row whose id names a fault meets it, for real, in the same transaction. */
  const faultySink: Sink<ProbeRow> = {
    name: 'writer_probe',
    async write(tx, rows) {
      for (const row of rows) {
        if (row.id === 'bad-statement') await tx.execute(sql`select no_such_column from writer_probe`)
        if (row.id === 'bad-code') (row.value as unknown as { length: number } | undefined)!.length // a TypeError, as a bug would throw
        if (row.id === 'disk-full') await tx.execute(sql.raw(`do $$ begin raise exception 'could not extend file' using errcode = '53100'; end $$`))
        // What a hot standby answers every write with, as a server does after a failover or when set read-only.
        if (row.id === 'read-only') await tx.execute(sql.raw(`do $$ begin raise exception 'cannot execute INSERT in a read-only transaction' using errcode = '25006'; end $$`))
        // What every write meets once core's role may no longer insert into a table.
        if (row.id === 'no-privilege') await tx.execute(sql.raw(`do $$ begin raise exception 'permission denied for table events' using errcode = '42501'; end $$`))
      }
      await probeSink().write(tx, rows)
    },
  }

  for (const [id, what] of [
    ['bad-statement', 'a statement failing with an SQL error of its own (not a data error)'],
    ['bad-code', 'the sink throwing a TypeError on a value'],
  ] as const) {
    test(`${what} fails only its own request, 500 internal_error, and the writer does not fail fast`, async () => {
      const now = 1_000_000 // frozen: a fail-fast window would still be open at the next write
      const lines: string[] = []
      const w = createWriter(database.db, createLogger('warn', (line) => lines.push(line)), { concurrency: 1, lingerMs: 20, now: () => now })
      const ids = ['s1', 's2', id, 's3', 's4', 's5']
      const results = await Promise.allSettled(ids.map((rowId) => w.write(request(faultySink, { id: rowId }))))
      expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(['ok', 'ok', 'internal_error', 'ok', 'ok', 'ok'])
      expect(results[2]).toMatchObject({ reason: { status: 500 } })
      expect((results[2] as PromiseRejectedResult).reason.message).not.toContain('no_such_column')
      // The operator's log says why, once, on one line: the database's reason, not the failed query.
      const logged = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 'error')
      expect(logged).toHaveLength(1)
      expect(logged[0].msg).toBe('a request could not be stored')
      if (id === 'bad-statement') expect(logged[0].error).toMatch(/column "no_such_column" does not exist/)
      else expect(logged[0].stack).toContain('writer.test.ts')
      await w.write(request(faultySink, { id: 's6' }))
      expect((await stored()).map((r) => r.id)).toEqual(['s1', 's2', 's3', 's4', 's5', 's6'])
    })
  }

  for (const [id, what] of [
    ['disk-full', 'disk full'],
    ['read-only', 'read-only: a standby after a failover'],
    ['no-privilege', 'permission denied: privileges revoked'],
  ] as const) {
    test(`a database in trouble (${what}) fails the whole batch with storage_unavailable and fails fast: no request is singled out`, async () => {
      let now = 1_000_000
      const w = writer({ lingerMs: 20, failFastMs: 1000, now: () => now })
      let commits = 0
      const counting: Sink<ProbeRow> = { name: 'writer_probe', write: (tx, rows) => (commits++, faultySink.write(tx, rows)) }
      const results = await Promise.allSettled(['t1', id, 't2', 't3'].map((rowId) => w.write(request(counting, { id: rowId }))))
      expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(Array(4).fill('storage_unavailable'))
      expect(commits).toBe(1)
      await expect(w.write(request(counting, { id: 't4' }))).rejects.toMatchObject({ code: 'storage_unavailable', details: { retryAfterSeconds: 2 } })
      now += 1001
      await w.write(request(counting, { id: 't4' }))
      expect((await stored()).map((r) => r.id)).toEqual(['t4'])
    })
  }

  test('an error that ends the session (FATAL, whatever its SQLSTATE) is the connection\'s trouble, not the request\'s', async () => {
    // The server ending an idle transaction's session: postgres.js hands its FATAL to the statement under way.
    const ended: Sink<ProbeRow> = {
      name: 'writer_probe',
      write: async () => {
        throw Object.assign(new Error('terminating connection due to idle-in-transaction timeout'), { code: '25P03', severity: 'FATAL' })
      },
    }
    const w = writer({ lingerMs: 20, now: () => 1_000_000 })
    const results = await Promise.allSettled(['i1', 'i2'].map((id) => w.write(request(ended, { id }))))
    expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(['storage_unavailable', 'storage_unavailable'])
  })

  test('a system error whose code looks like an SQLSTATE (EPIPE) is the connection\'s trouble, not the request\'s', async () => {
    const broken: Sink<ProbeRow> = {
      name: 'writer_probe',
      write: async () => {
        throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' })
      },
    }
    const w = writer({ lingerMs: 20, now: () => 1_000_000 })
    const results = await Promise.allSettled(['e1', 'e2'].map((id) => w.write(request(broken, { id }))))
    expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(['storage_unavailable', 'storage_unavailable'])
    await expect(w.write(request(probeSink(), { id: 'e3' }))).rejects.toMatchObject({ code: 'storage_unavailable' })
  })

  test('with several tables in a commit, the refused row is still found: later statements only report the aborted transaction', async () => {
    // The second table's bad row fails while the first table is still writing row by row, whose next
    // statement then fails only as "transaction aborted".
    const first = probeSink()
    const second: Sink<ProbeRow> = { name: 'writer_probe_second', write: (tx, rows) => probeSink().write(tx, rows.map((r) => ({ ...r, id: `${r.id}-2` }))) }
    const w = writer({ lingerMs: 20 })
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        w.write({
          ...request(first),
          writes: [
            { sink: first, rows: [{ id: `m${i}` }] },
            { sink: second, rows: [{ id: `m${i}`, value: i === 2 ? 'not-a-uuid' : crypto.randomUUID() }] },
          ],
        }),
      ),
    )
    expect(results.map((r) => (r.status === 'rejected' ? r.reason.code : 'ok'))).toEqual(['ok', 'ok', 'validation_failed', 'ok', 'ok', 'ok'])
    expect(await stored()).toHaveLength(10)
  })
})

describe('lock order', () => {
  /** A sink that notes when it starts and ends writing, and what it was given. */
  const notingSink = (name: string, notes: string[], extra: Partial<Sink<ProbeRow>> = {}, during?: Sink<ProbeRow>['write']): Sink<ProbeRow> => ({
    name,
    async write(tx, rows, hand) {
      notes.push(`${name} starts with ${rows.map((r) => r.id).join(',')}`)
      await during?.(tx, rows, hand)
      notes.push(`${name} ends`)
    },
    ...extra,
  })

  test('sinks are written by phase, then by name; one that feeds others ends before any after it starts, and what it hands is written with their own rows', async () => {
    const notes: string[] = []
    const rows = notingSink('a_rows', notes)
    const people = notingSink('z_people', notes, { phase: 'people', feeds: [rows] }, async (tx, _, hand) => {
      await tx.execute(sql`select pg_sleep(0.02)`)
      hand!(rows, [{ id: 'handed' }])
    })
    const sessions = notingSink('m_sessions', notes, { phase: 'sessions' })
    const w = writer()
    await w.write({ ...request(rows, { id: 'own' }), writes: [{ sink: rows, rows: [{ id: 'own' }] }, { sink: people, rows: [{ id: 'p' }] }, { sink: sessions, rows: [{ id: 's' }] }] })
    // Rows handed to a sink that the request gave none are written too.
    await w.write(request(people, { id: 'p2' }))
    expect(notes.filter((n) => n.includes('starts') || n.startsWith('z_people'))).toEqual([
      'm_sessions starts with s',
      'z_people starts with p',
      'z_people ends',
      'a_rows starts with own,handed',
      'z_people starts with p2',
      'z_people ends',
      'a_rows starts with handed',
    ])
  })

  test('rows handed to a sink the giver does not feed fail that request alone, with internal_error', async () => {
    const notes: string[] = []
    const fed = notingSink('a_fed', notes)
    const stranger = probeSink()
    const giver = notingSink('b_giver', notes, { phase: 'people', feeds: [fed] }, async (_, __, hand) => hand!(stranger, [{ id: 'stray' }]))
    const w = writer({ lingerMs: 5 })
    const [refused, stored_] = await Promise.allSettled([w.write(request(giver, { id: 'g' })), w.write(request(probeSink(), { id: 'kept' }))])
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'internal_error' } })
    expect(stored_.status).toBe('fulfilled')
    expect((await stored()).map((r) => r.id)).toEqual(['kept'])
  })
})
