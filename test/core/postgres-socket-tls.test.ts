import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'node:net'
import tls from 'node:tls'
import postgres from 'postgres'
import { answerWithin } from '@sightline/core/db'
import { pacedSockets } from '@sightline/core/postgres-socket'
import { engine } from '../helpers/database'
import type { PostgresServer } from '../helpers/postgres-server'
import { startTlsPostgresServer, tlsPostgresServerMissing } from '../helpers/tls-postgres-server'

// The two mends of postgres-socket.test.ts ("a connection whose socket closes while a statement waits
// to be written", "a socket whose connection postgres.js has let go of") again, over TLS
// (sslmode=require). postgres.js then reads and writes through, and listens to, the TLS socket it
// wraps around the one core made, so the mends must reach that one. The server is this test's own,
// with ssl=on; Postgres only, and only where a server can be started (its binaries and openssl).

const missing = tlsPostgresServerMissing()
const runs = engine === 'postgres' && missing === undefined
if (engine === 'postgres' && missing) console.warn(`postgres-socket-tls: skipped: ${missing}`)

let server: PostgresServer | undefined
beforeAll(async () => {
  if (runs) server = await startTlsPostgresServer()
})
afterAll(async () => {
  await server?.close()
})

/**
 * Every TLS socket made in this process from here on, in order: what postgres.js reads from and
 * writes to under TLS, which it gives no way to reach. Wrapped once and left so: core wraps
 * tls.connect too (see whenWrappedInTls), around this, and putting this back would undo that.
 */
const tlsSocketsMade: Socket[] = []
const tlsConnect = tls.connect
tls.connect = function (this: unknown, ...args: unknown[]) {
  const secure = (tlsConnect as (...args: unknown[]) => tls.TLSSocket).apply(this, args)
  tlsSocketsMade.push(secure)
  return secure
} as typeof tls.connect

describe.skipIf(!runs)('over TLS, a connection whose socket closes while a statement waits to be written', () => {
  test('connects again and is answered, its startup message sent', async () => {
    const paced = pacedSockets()
    const made = tlsSocketsMade.length
    const client = postgres(`${server!.url}?sslmode=require`, {
      max: 1,
      fetch_types: false,
      connect_timeout: 3,
      onnotice: () => {},
      socket: paced,
    } as postgres.Options<{}>)
    try {
      expect((await client.unsafe('select ssl from pg_stat_ssl where pid = pg_backend_pid()'))[0]?.ssl).toBe(true)
      // A statement gathered, and the TLS socket closed before it is written: the statement fails.
      const lost = client.unsafe('select 2').execute()
      tlsSocketsMade[made].destroy()
      await expect(answerWithin(lost, 3_000, 'no answer')).rejects.toThrow('CONNECTION_CLOSED')
      // The next one has new sockets, which are written to: without the mend, its startup message
      // stayed unsent and it waited out connect_timeout in silence.
      expect((await answerWithin(client.unsafe('select 3 as n'), 2_000, 'no answer'))[0]?.n).toBe(3)
      expect(tlsSocketsMade.length - made).toBe(2)
    } finally {
      await client.end({ timeout: 0 })
    }
  }, 15_000)
})

describe.skipIf(!runs)('over TLS, a socket whose connection postgres.js has let go of', () => {
  test('an error its TLS socket reports afterwards (ECONNRESET from its close) is dropped, not thrown', async () => {
    const socket = await pacedSockets()({ host: ['127.0.0.1'], port: [server!.port] })
    let secure: tls.TLSSocket | undefined
    try {
      // As postgres.js does under sslmode=require: an SSLRequest, the server's 'S', then TLS on the socket.
      await new Promise((resolve) => socket.once('connect', resolve))
      const accepted = new Promise<Buffer>((resolve) => socket.once('data', resolve))
      socket.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]))
      expect(String.fromCharCode((await accepted)[0])).toBe('S')
      socket.removeAllListeners()
      secure = tls.connect({ socket, rejectUnauthorized: false })
      await new Promise((resolve) => secure!.once('secureConnect', resolve))
      const heard: unknown[] = []
      secure.on('error', (error) => heard.push(error))
      // While someone listens, errors reach them.
      secure.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
      expect(heard).toHaveLength(1)
      // postgres.js removes every listener of the TLS socket when it hears of the close.
      secure.removeAllListeners()
      expect(() => secure!.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).not.toThrow()
    } finally {
      secure?.destroy()
      socket.destroy()
    }
  })
})
