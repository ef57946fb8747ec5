import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Database } from '@sightline/core/db'

/** The statement of the COPY tests: a `copied (id int primary key, note text)` table the caller made. */
export const COPY_STATEMENT = 'copy copied (id, note) from stdin'

/**
 * What the writer's COPY (CopyIn) promises on either database, as tests of the enclosing describe:
 * rows committed with the transaction after the statements issued before, and a duplicate key leaving
 * the transaction open as it was before the COPY. They leave ids 1, 2, 3, 10 and 12 in `copied`.
 */
export function copyInContract(database: () => Database): void {
  const ids = async () => (await database().rows<{ id: number }>(sql`select id from copied order by id`)).map((r) => r.id)

  test('the rows are committed with the transaction, after the statements issued before the COPY', async () => {
    const db = database()
    await db.transaction(async (tx, copyIn) => {
      const before = db.rows(sql`insert into copied values (1, 'inserted')`, tx)
      const pending = copyIn!(COPY_STATEMENT)
      await before
      await pending.commit('2\tcopied\n3\t\\N\n') // \\N: NULL
    })
    expect(await db.rows(sql`select id, note from copied order by id`)).toEqual([
      { id: 1, note: 'inserted' },
      { id: 2, note: 'copied' },
      { id: 3, note: null },
    ])
  })

  test('a COPY that fails on a duplicate key leaves the transaction as before it, to go on and commit', async () => {
    const db = database()
    await db.transaction(async (tx, copyIn) => {
      await db.rows(sql`insert into copied values (10, null)`, tx)
      const failed = await copyIn!(COPY_STATEMENT).commit('11\tx\n1\tduplicate\n').then(() => 'copied', (error: { code?: string }) => error.code)
      expect(failed).toBe('23505')
      await db.rows(sql`insert into copied values (12, null)`, tx)
    })
    expect(await ids()).toEqual([1, 2, 3, 10, 12])
  })
}
