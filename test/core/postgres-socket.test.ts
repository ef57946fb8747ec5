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

describe('a server that answers every connection with an error', () => {
  test('(shutting down, starting up, too many clients) is connected to again at a pace too', async () => {
    // What Postgres says while it shuts down: FATAL 57P03, then it closes the connection. A LISTEN
    // connection (the key cache's) is one postgres.js opens again by itself as soon as it is lost.
    let accepted = 0
    const fatal = errorResponse('FATAL', '57P03', 'the database system is shutting down')
    const refusing = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { open: () => void accepted++, data: (socket) => void socket.end(fatal) } })
    const db = postgresDatabase(`postgres://sightline@127.0.0.1:${refusing.port}/sightline`)
    try {
      void db.listen('changes', () => {}).catch(() => {})
      await Bun.sleep(2_000)
      // Paced as connections closed unanswered (50 ms doubling): a handful in 2 s. Unpaced, hundreds.
      expect(accepted).toBeGreaterThan(1)
      expect(accepted).toBeLessThanOrEqual(10)
    } finally {
      refusing.stop(true)
      await db.close()
    }
  })
})

// A server restarted refuses connections while it is down; core must store again soon after it is back.
describe('a server that refused connections for a while', () => {
  test('is connected to again within one pause of its return, not after postgres.js\'s own backoff', async () => {
    const port = refusingPort()
    const db = postgresDatabase(`postgres://sightline@127.0.0.1:${port}/sightline`, 1)
    let server: ReturnType<typeof fakeServer> | undefined
    try {
      // Asked again and again while it is down, as the writer and the health checks do: each attempt
      // is refused, and the connection's next one paced (from 50 ms up to 2 s).
      const downUntil = performance.now() + 4_000
      let refused = 0
      while (performance.now() < downUntil) await db.rows(sql`select 1`).catch(() => refused++)
      expect(refused).toBeGreaterThan(3)
      server = fakeServer(port)
      const back = performance.now()
      await answerWithin(db.rows(sql`select 1`), 8_000, 'no answer')
      // At most the pause of a refused connection (2 s). With postgres.js's backoff, whose count of
      // refused connections is 6 or more by now, it waits 3.6 s and more, up to 20 s.
      expect(performance.now() - back).toBeLessThan(2_500)
    } finally {
      await db.close()
      server?.stop(true)
    }
  }, 15_000)

  test('pauses under way end once one of the connections is answered', async () => {
    const paced = pacedSockets()
    const refused = { host: ['127.0.0.1'], port: [refusingPort()] }
    const sockets: Socket[] = []
    const server = fakeServer(0)
    try {
      // Seven refused at once: the next connection waits 2 s.
      const closes = await Promise.all(Array.from({ length: 7 }, () => paced(refused)))
      sockets.push(...closes)
      await Promise.all(closes.map((socket) => new Promise((resolve) => socket.once('close', resolve))))
      await Bun.sleep(10)
      const up = { host: ['127.0.0.1'], port: [server.port] }
      const asked = performance.now()
      const first = paced(up)
      await Bun.sleep(1_000)
      const second = paced(up)
      const answeredFirst = await first
      sockets.push(answeredFirst)
      // It is answered (the fake server greets whatever it is sent first).
      answeredFirst.write(Buffer.from([0, 0, 0, 8, 0, 0, 0, 0]))
      await new Promise((resolve) => answeredFirst.once('data', resolve))
      sockets.push(await second)
      // The second began its 2 s pause 1 s after the first: it ends with the first's answer.
      expect(performance.now() - asked).toBeLessThan(2_600)
    } finally {
      for (const socket of sockets) socket.destroy()
      server.stop(true)
    }
  })
})

// postgres.js gathers a turn's writes and sends them from a setImmediate; a socket closing with one
// pending left every later socket of that connection unwritten to (see mendEvents in core/src/postgres-socket.ts).
describe('a connection whose socket closes while a statement waits to be written', () => {
  test('connects again and is answered, its startup message sent', async () => {
    const received: number[] = []
    const server = fakeServer(0, received)
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

/**
 * Just enough of a Postgres server on `port` (0: any free one): authentication ok and ready, then
 * whatever comes answered as one statement done and ready. `received` counts each connection's bytes.
 */
function fakeServer(port: number, received: number[] = []) {
  const ready = Buffer.from([0x5a, 0, 0, 0, 5, 0x49])
  const greeting = Buffer.concat([Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]), ready])
  const done = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 13]), Buffer.from('SELECT 0\0'), ready])
  return Bun.listen<{ connection: number }>({
    hostname: '127.0.0.1',
    port,
    socket: {
      open: (socket) => void (socket.data = { connection: received.push(0) - 1 }),
      data(socket, data) {
        socket.write(received[socket.data.connection] === 0 ? greeting : done)
        received[socket.data.connection] += data.length
      },
    },
  })
}

/** A Postgres ErrorResponse message with its severity, SQLSTATE and message fields. */
function errorResponse(severity: string, code: string, message: string): Buffer {
  const fields = Buffer.from(`S${severity}\0C${code}\0M${message}\0\0`)
  const length = Buffer.alloc(4)
  length.writeUInt32BE(fields.length + 4)
  return Buffer.concat([Buffer.from('E'), length, fields])
}

/** A port nothing listens on: connections to it are refused. */
function refusingPort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = listener
  listener.stop(true)
  return port
}
