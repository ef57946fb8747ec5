import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { postgresDatabase } from '@sightline/core/db'
import { postgresTarget } from '@sightline/core/postgres-url'
import { engine, TEST_DATABASE_URL } from '../helpers/database'

describe('postgresTarget: libpq connection URIs as postgres.js takes them', () => {
  test('a URL that names its server in the authority goes as it is', () => {
    for (const url of ['postgres://u:p@db.internal:5433/sightline?sslmode=require', 'postgresql://h1:5432,h2:5433/sightline', 'postgres:///sightline']) {
      expect(postgresTarget(url)).toEqual({ url })
    }
  })

  test("a Unix socket's directory in the query, or percent-encoded as the authority, is the host option; the port with it", () => {
    expect(postgresTarget('postgresql:///sightline?host=/var/run/postgresql')).toEqual({
      url: 'postgresql:///sightline',
      host: '/var/run/postgresql',
    })
    expect(postgresTarget('postgresql://sightline@%2Fvar%2Frun%2Fpostgresql:5433/sightline')).toEqual({
      url: 'postgresql://sightline@localhost/sightline',
      host: '/var/run/postgresql',
      port: 5433,
    })
    // A user and password with no host (no URL to WHATWG), the rest of the query kept for postgres.js.
    expect(postgresTarget('postgres://u:p%40ss@/db?host=/tmp/pg&port=6000&sslmode=disable&application_name=x')).toEqual({
      url: 'postgres://u:p%40ss@localhost/db?sslmode=disable&application_name=x',
      host: '/tmp/pg',
      port: 6000,
    })
  })

  test('host and port in the query override the authority, as in libpq; a port that is no number is refused', () => {
    expect(postgresTarget('postgres://db.internal:5433/sightline?host=replica,primary')).toEqual({
      url: 'postgres://db.internal:5433/sightline',
      host: 'replica,primary',
    })
    expect(postgresTarget('postgres://db.internal:5433/sightline?port=6432')).toEqual({ url: 'postgres://db.internal:5433/sightline', port: 6432 })
    expect(postgresTarget('postgres:///sightline?port=6432')).toEqual({ url: 'postgres:///sightline', port: 6432 })
    expect(() => postgresTarget('postgres://db/sightline?port=pgbouncer')).toThrow(/"pgbouncer" is not a port number/)
  })
})

// The server CI starts listens on a Unix socket beside TCP; it says where.
describe.skipIf(engine !== 'postgres')("core's database over the server's Unix socket", () => {
  test('both libpq forms of a socket URI reach the server', async () => {
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    const [{ directories, port, user, database }] = await admin<{ directories: string; port: string; user: string; database: string }[]>`
      select current_setting('unix_socket_directories') as directories, current_setting('port') as port, current_user as user, current_database() as database`
    await admin.end()
    const directory = directories.split(',')[0].trim()
    for (const url of [
      `postgresql:///${database}?host=${directory}&port=${port}&user=${user}`,
      `postgresql://${user}@${encodeURIComponent(directory)}:${port}/${database}`,
    ]) {
      const db = postgresDatabase(url, 1)
      try {
        const [row] = await db.rows<{ local: boolean }>(sql`select inet_client_addr() is null as local`)
        expect({ url, local: row.local }).toEqual({ url, local: true }) // no client address: a Unix socket
      } finally {
        await db.close()
      }
    }
  })
})
