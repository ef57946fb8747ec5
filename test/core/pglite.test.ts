import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { embeddedDatabase, openEmbeddedDatabase, type Database } from '@sightline/core/db'
import { COPY_STATEMENT, copyInContract } from '../helpers/copy-in'

/**
 * The embedded database's clients (core/src/pglite.ts): statements of the writers' transactions are
 * prepared on their second use, and must give what a plain query gives; drizzle's result parsers are
 * PGlite's own. These run on PGlite whatever database the rest of the suite uses.
 */
let db: Database
beforeAll(async () => {
  db = embeddedDatabase(await PGlite.create())
  await db.rows(sql`create table things (id int primary key, name text, tags text[], doc jsonb, raw bytea, at timestamptz, day date, ok boolean, amount numeric)`)
})
afterAll(() => db.close())

const insert = (id: number, name: string | null) =>
  sql`insert into things (id, name, tags, doc, raw, at, day, ok, amount)
      values (${id}, ${name}, ${'{a,"b\'c"}'}::text[], ${JSON.stringify({ n: id, s: 'é' })}::jsonb, ${new Uint8Array([0, 1, 255])}::bytea,
        to_timestamp(${1_700_000_000 + id}), '2026-01-02', ${id % 2 === 0}, ${'12.50'}::numeric)
      returning id, name, tags, doc, raw, at, day, ok, amount`

const prepared = () => db.rows<{ name: string }>(sql`select name from pg_prepared_statements order by name`)

describe('embedded database clients', () => {
  test('a writer transaction prepares a statement the second time it sees it, and reads the same rows either way', async () => {
    const plain = await db.rows(insert(1, 'first'))
    const viaTransaction = await db.transaction((tx) => db.rows(insert(2, null), tx))
    expect(await prepared()).toEqual([])
    const viaPrepared = await db.transaction((tx) => db.rows(insert(3, 'third'), tx))
    expect((await prepared()).length).toBe(1)
    const again = await db.transaction((tx) => db.rows(insert(4, 'fourth'), tx))
    expect((await prepared()).length).toBe(1)

    const shape = (rows: unknown[]) => rows.map((r) => ({ ...(r as object), id: 0, name: '', at: '', ok: false, doc: {} }))
    expect(shape(viaTransaction)).toEqual(shape(plain))
    expect(shape(viaPrepared)).toEqual(shape(plain))
    expect(again).toEqual([
      { id: 4, name: 'fourth', tags: ['a', "b'c"], doc: { n: 4, s: 'é' }, raw: new Uint8Array([0, 1, 255]), at: '2023-11-14 22:13:24+00', day: '2026-01-02', ok: true, amount: '12.50' },
    ])
    // Timestamps and dates stay the text Postgres sends, as drizzle reads them, on every path.
    expect(typeof (viaPrepared[0] as { at: unknown }).at).toBe('string')
  })

  test('a prepared statement that fails fails its transaction with its SQLSTATE, and nothing of it is kept', async () => {
    await db.transaction((tx) => db.rows(sql`insert into things (id, name) values (${10}, ${'ten'})`, tx))
    await db.transaction((tx) => db.rows(sql`insert into things (id, name) values (${11}, ${'eleven'})`, tx))
    const failed = db.transaction(async (tx) => {
      await db.rows(sql`insert into things (id, name) values (${12}, ${'twelve'})`, tx)
      await db.rows(sql`insert into things (id, name) values (${10}, ${'again'})`, tx)
    })
    const error = await failed.catch((e) => e)
    const code = (e: { code?: unknown; cause?: unknown } | undefined): unknown => e && (typeof e.code === 'string' ? e.code : code(e.cause as never))
    expect(code(error)).toBe('23505')
    expect(await db.rows(sql`select id from things where id >= 10 order by id`)).toEqual([{ id: 10 }, { id: 11 }])
    await db.transaction((tx) => db.rows(sql`insert into things (id, name) values (${12}, ${'twelve'})`, tx))
    expect(await db.rows(sql`select name from things where id = 12`)).toEqual([{ name: 'twelve' }])
  })

  test('a statement prepared in a transaction that rolls back stays prepared', async () => {
    const update = (name: string) => sql`update things set name = ${name} where id = ${20}`
    await db.rows(sql`insert into things (id, name) values (${20}, ${'twenty'})`)
    await db.transaction((tx) => db.rows(update('first'), tx))
    const before = (await prepared()).length
    const failed = db.transaction(async (tx) => {
      await db.rows(update('second'), tx)
      await db.rows(sql`select 1 / 0`, tx)
    })
    expect(await failed.then(() => 'committed', () => 'rolled back')).toBe('rolled back')
    expect((await prepared()).length).toBe(before + 1)
    await db.transaction((tx) => db.rows(update('third'), tx))
    expect(await db.rows(sql`select name from things where id = 20`)).toEqual([{ name: 'third' }])
  })
})

  test('statements issued together run in the order issued, also the one being prepared then', async () => {
    // The writer issues a commit's statements together: a sink's statement seen a second time is
    // prepared first, and a later sink's statement, seen anew, must still see what it wrote.
    const insert = (id: number) => sql`insert into things (name, id) values (${'in order'}, ${id})`
    const count = sql`select count(*)::int as n from things where name = 'in order'`
    await db.transaction((tx) => db.rows(insert(30), tx))
    const counted = await db.transaction(async (tx) => (await Promise.all([db.rows(insert(31), tx), db.rows(count, tx)]))[1])
    expect(counted).toEqual([{ n: 2 }])
  })

// The writer's COPY (CopyIn) on PGlite, which reads the rows from a blob (core/src/pglite.ts, copyInto).
describe('embedded transactions ending with a COPY', () => {
  const ids = async () => (await db.rows<{ id: number }>(sql`select id from copied order by id`)).map((r) => r.id)
  beforeAll(() => db.rows(sql`create table copied (id int primary key, note text)`))

  copyInContract(() => db)

  test('rows copied in a transaction that then fails are not kept', async () => {
    const failed = db.transaction(async (_tx, copyIn) => {
      await copyIn!(COPY_STATEMENT).commit('20\tx\n')
      throw new Error('the callback failed after its COPY')
    })
    await expect(failed).rejects.toThrow('the callback failed after its COPY')
    expect(await ids()).toEqual([1, 2, 3, 10, 12])
  })

  test('only a COPY from stdin is taken', async () => {
    await expect(db.transaction(async (_tx, copyIn) => copyIn!('copy copied from program \'true\'').commit(''))).rejects.toThrow('not a COPY from stdin')
  })
})

describe('embedded database on disk', () => {
  test('opens with a small buffer pool, keeps its data across a reopen and takes one process at a time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-embedded-'))
    try {
      const first = await openEmbeddedDatabase(dir)
      expect(await first.rows(sql`show shared_buffers`)).toEqual([{ shared_buffers: '32MB' }])
      await first.rows(sql`create table kept (n int)`)
      await first.transaction((tx) => first.rows(sql`insert into kept values (${1})`, tx))
      await first.close()
      const second = await openEmbeddedDatabase(dir)
      expect(await second.rows(sql`select n from kept`)).toEqual([{ n: 1 }])
      await second.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
