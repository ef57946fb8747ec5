import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { answerWithin, postgresDatabase } from '@sightline/core/db'
import { proxiedTestDatabase } from '../helpers/breakable-database'
import { engine } from '../helpers/database'

// A proxy, or a container's published port, in front of a Postgres that is down takes each connection
// and closes it once the driver spoke. postgres.js alone then connects again at once, without end.

describe('a server that closes every connection unanswered', () => {
  test('is connected to again at a pace, not a thousand times a second', async () => {
    let accepted = 0
    const closing = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { open: () => void accepted++, data: (socket) => void socket.end() } })
    const db = postgresDatabase(`postgres://sightline@127.0.0.1:${closing.port}/sightline`)
    try {
      await expect(answerWithin(db.rows(sql`select 1`), 3_000, 'no answer')).rejects.toThrow('no answer')
      // 50 ms doubling to 2 s between attempts: 7 in the 3 s. Unpaced, thousands.
      expect(accepted).toBeGreaterThan(1)
      expect(accepted).toBeLessThanOrEqual(10)
    } finally {
      closing.stop(true)
      await db.close()
    }
  })

  test.skipIf(engine !== 'postgres')('is answered again within the pace once the database is back', async () => {
    const { database, proxy, url } = await proxiedTestDatabase()
    const db = postgresDatabase(url)
    try {
      expect(await db.rows(sql`select 1 as n`)).toEqual([{ n: 1 }])
      proxy.hangUp()
      // The pool's connection is closed under it; the next statement finds only closing ones.
      await expect(answerWithin(db.rows(sql`select 2 as n`), 3_000, 'no answer')).rejects.toThrow()
      proxy.resume()
      const back = performance.now()
      expect(await answerWithin(db.rows(sql`select 3 as n`), 5_000, 'no answer')).toEqual([{ n: 3 }])
      expect(performance.now() - back).toBeLessThan(3_000)
    } finally {
      await db.close()
      proxy.close()
      await database.close()
    }
  })
})
