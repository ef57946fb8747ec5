import { describe, expect, test } from 'bun:test'
import type { Socket } from 'node:net'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { answerWithin, postgresDatabase } from '@sightline/core/db'
import { pacedSockets } from '@sightline/core/postgres-socket'
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

// postgres.js gathers a turn's writes and sends them from a setImmediate; a socket closing with one
// pending left every later socket of that connection unwritten to (see closeAfterPendingWrites).
describe('a connection whose socket closes while a statement waits to be written', () => {
  test('connects again and is answered, its startup message sent', async () => {
    // Just enough of a server: authentication ok and ready, then each simple query done and ready.
    const ready = Buffer.from([0x5a, 0, 0, 0, 5, 0x49])
    const greeting = Buffer.concat([Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]), ready])
    const done = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 13]), Buffer.from('SELECT 0\0'), ready])
    const received: number[] = []
    const server = Bun.listen<{ connection: number }>({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        open: (socket) => void (socket.data = { connection: received.push(0) - 1 }),
        data(socket, data) {
          socket.write(received[socket.data.connection] === 0 ? greeting : done)
          received[socket.data.connection] += data.length
        },
      },
    })
    const paced = pacedSockets()
    const sockets: Socket[] = []
    const client = postgres(`postgres://sightline@127.0.0.1:${server.port}/sightline`, {
      max: 1,
      fetch_types: false,
      connect_timeout: 3,
      onnotice: () => {},
      socket: async (target: Parameters<typeof paced>[0]) => sockets[sockets.push(await paced(target)) - 1],
    } as postgres.Options<{}>)
    try {
      await client.unsafe('select 1')
      // A statement gathered, and the socket closed before it is written: the statement fails.
      const lost = client.unsafe('select 2').execute()
      sockets[0].destroy()
      await expect(answerWithin(lost, 3_000, 'no answer')).rejects.toThrow('CONNECTION_CLOSED')
      // The next one has a new socket, which is written to.
      expect((await answerWithin(client.unsafe('select 3'), 1_000, 'no answer')).command).toBe('SELECT')
      expect(sockets).toHaveLength(2)
      expect(received[1]).toBeGreaterThan(0)
    } finally {
      await client.end({ timeout: 0 })
      server.stop(true)
    }
  })
})

describe('a socket whose connection postgres.js has let go of', () => {
  test('an error it reports afterwards (ECONNRESET from its close) is dropped, not thrown', async () => {
    const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const socket = await pacedSockets()({ host: ['127.0.0.1'], port: [server.port] })
    try {
      await new Promise((resolve) => socket.once('connect', resolve))
      const heard: unknown[] = []
      socket.on('error', (error) => heard.push(error))
      // While someone listens, errors reach them.
      socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
      expect(heard).toHaveLength(1)
      // postgres.js removes every listener when it hears of the close.
      socket.removeAllListeners()
      expect(() => socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).not.toThrow()
    } finally {
      socket.destroy()
      server.stop(true)
    }
  })
})
