import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { answerWithin, postgresDatabase, type Database } from '@sightline/core/db'
import { pacedSockets } from '@sightline/core/postgres-socket'
import { postgresTransactions } from '@sightline/core/postgres-transaction'
import { faultOf } from '@sightline/core/storage-errors'
import { COPY_STATEMENT, copyInContract } from '../helpers/copy-in'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy'

// The writer's transactions on Postgres when their connection goes away under them, as it does when
// the server restarts: each fails with a connection error, none takes the process down or waits
// forever, and the pool serves the next ones.
describe.skipIf(engine !== 'postgres')('Postgres transactions losing their connection', () => {
  let database: TestDatabase
  let db: Database
  let admin: postgres.Sql
  beforeAll(async () => {
    database = await createTestDatabase()
    db = postgresDatabase(database.url!, 4)
    admin = postgres(database.url!, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    await db.close()
    await admin.end()
    await database.close()
  })

  const terminate = (pid: number) => admin`select pg_terminate_backend(${pid})`
  const answer = () => db.transaction((tx) => db.rows<{ x: number }>(sql`select 42 as x`, tx))

  test('a connection that closes between two statements fails the transaction, and the next one is served', async () => {
    const failed = db.transaction(async (tx) => {
      const [{ pid }] = await db.rows<{ pid: number }>(sql`select pg_backend_pid() as pid`, tx)
      await terminate(pid)
      await Bun.sleep(200) // the close reaches the pool before the next statement
      await db.rows(sql`select 1`, tx)
    })
    expect(await failed.then(() => 'committed', (error: { code?: string }) => error.code)).toBe('CONNECTION_CLOSED')
    expect(await answer()).toEqual([{ x: 42 }])
  })

  test('a statement that ends the session fails the transaction (no ROLLBACK sent on the dead connection), and the next one is served', async () => {
    const failed = db.transaction((tx) => db.rows(sql`select pg_terminate_backend(pg_backend_pid())`, tx))
    expect(await failed.then(() => 'committed', () => 'failed')).toBe('failed')
    expect(await answer()).toEqual([{ x: 42 }])
  })

  test('under repeated terminations every transaction settles soon, and the pool keeps serving', async () => {
    let stop = false
    let settled = 0
    const started = new Map<number, number>()
    let next = 0
    const client = async () => {
      while (!stop) {
        const id = next++
        started.set(id, performance.now())
        await db
          .transaction(async (tx) => {
            await db.rows(sql`select pg_sleep(0.002)`, tx)
            await Promise.all([db.rows(sql`select 1`, tx), db.rows(sql`select 2`, tx)])
          })
          .catch(() => {})
        started.delete(id)
        settled++
      }
    }
    const clients = Array.from({ length: 6 }, client)
    for (let i = 0; i < 8; i++) {
      await Bun.sleep(150)
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    }
    await Bun.sleep(1_000)
    const now = performance.now()
    expect([...started.values()].filter((at) => now - at > 1_000)).toEqual([])
    stop = true
    await Promise.all(clients)
    expect(settled).toBeGreaterThan(100)
    expect(await answer()).toEqual([{ x: 42 }])
  })
})

// A proxy, or a container's published port, in front of a Postgres that is down takes each connection
// and closes it unanswered: postgres.js never settles a reservation then. The writer gives its commit
// up after commitTimeoutMs and answers 503; the transaction must give up too, not ask the pool for a
// connection again and again for as long as the outage lasts, keeping the batch it was given, and run
// it once the server is back.
describe('a transaction that gets no connection', () => {
  test('gives up after its deadline, as a storage failure, asks the pool no more and never runs', async () => {
    const closing = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: (socket) => void socket.end() } })
    const transactions = postgresTransactions({ reserveTimeoutMs: 500 })
    const socket = { socket: pacedSockets() } as postgres.Options<{}>
    const client = postgres(`postgres://sightline@127.0.0.1:${closing.port}/sightline`, { max: 2, backoff: false, onnotice: () => {}, ...socket, onclose: transactions.connectionClosed })
    let asks = 0
    const reserve = client.reserve
    client.reserve = () => (asks++, reserve())
    let ran = false
    try {
      const outcome = transactions.run(client, async () => void (ran = true))
      const error = await answerWithin(outcome, 2_000, 'still waiting').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(Error)
      expect((error as Error).message).not.toBe('still waiting')
      expect(faultOf(error)).toBe('storage')
      const asked = asks
      await Bun.sleep(1_000)
      expect(asks).toBe(asked)
      expect(ran).toBe(false)
    } finally {
      transactions.close()
      closing.stop(true)
      await client.end({ timeout: 0 })
    }
  })
})

// The writer's COPY (CopyIn) on a real server: what a failure leaves of the transaction.
describe.skipIf(engine !== 'postgres')('Postgres transactions ending with a COPY', () => {
  let database: TestDatabase
  let db: Database
  beforeAll(async () => {
    database = await createTestDatabase()
    db = postgresDatabase(database.url!, 2)
    await db.rows(sql`create table copied (id int primary key, note text)`)
  })
  afterAll(async () => {
    await db.close()
    await database.close()
  })

  const ids = async () => (await db.rows<{ id: number }>(sql`select id from copied order by id`)).map((r) => r.id)

  copyInContract(() => db)

  test('a COPY given up leaves the transaction as before it', async () => {
    await db.transaction(async (tx, copyIn) => {
      const pending = copyIn!(COPY_STATEMENT)
      await pending.cancel()
      await db.rows(sql`insert into copied values (20, null)`, tx)
    })
    expect(await ids()).toEqual([1, 2, 3, 10, 12, 20])
  })

  test('a connection ended while the COPY waits for its rows fails the transaction, and the next one is served', async () => {
    const failed = db.transaction(async (tx, copyIn) => {
      const pending = copyIn!(COPY_STATEMENT)
      let copying: { pid: number }[] = []
      const deadline = Date.now() + 5_000
      while (copying.length === 0 && Date.now() < deadline) {
        copying = await db.rows(sql`select pid from pg_stat_activity where datname = current_database() and query like 'savepoint copy_in;%'`)
      }
      const refused = await db.rows(sql`select 1`, tx).then(() => 'sent', (error: Error & { cause?: Error }) => (error.cause ?? error).message)
      expect(refused).toBe('a statement was sent on a transaction while its COPY was under way')
      await db.rows(sql`select pg_terminate_backend(${copying[0].pid})`)
      await pending.commit('30\tlost\n')
    })
    // The server may say why before it closes (57P01, admin_shutdown), or only close: either way the
    // connection ended, and the writer takes both for the database's trouble.
    const code = await failed.then(() => 'committed', (error: { code?: string }) => error.code)
    expect(['CONNECTION_CLOSED', '57P01']).toContain(code!)
    expect(faultOf(await failed.catch((error) => error))).toBe('storage')
    expect(await ids()).toEqual([1, 2, 3, 10, 12, 20])
  })

  test('a transaction an ignored failure left aborted is not reported committed (the server answers COMMIT with ROLLBACK)', async () => {
    const outcome = db.transaction(async (tx) => {
      await db.rows(sql`insert into copied values (1, 'again')`, tx).catch(() => {})
    })
    expect(await outcome.then(() => 'committed', (error: Error) => error.message)).toMatch(/rolled back/)
  })
})

/**
 * The frontend messages a client sent, by their type letter, from the bytes it wrote: a startup
 * message first (length and protocol, no type), then typed messages (type, length, body).
 */
function frontendMessages(): { push(chunk: Uint8Array): void; types(): string[] } {
  let pending = Buffer.alloc(0)
  let started = false
  const types: string[] = []
  return {
    push(chunk) {
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        const at = started ? 1 : 0
        if (pending.length < at + 4) return
        const end = at + pending.readInt32BE(at)
        if (pending.length < end) return
        if (started) types.push(String.fromCharCode(pending[0]))
        started = true
        pending = pending.subarray(end)
      }
    },
    types: () => types,
  }
}

// What a COPY costs on the wire: its rows, CopyDone, and nothing after.
describe.skipIf(engine !== 'postgres')('Postgres COPY messages', () => {
  let database: TestDatabase
  let db: Database
  let proxy: TcpProxy
  let sent: ReturnType<typeof frontendMessages>
  beforeAll(async () => {
    database = await createTestDatabase()
    const url = new URL(database.url!)
    sent = frontendMessages()
    proxy = startTcpProxy({ host: url.hostname, port: Number(url.port) }, { onClientData: (chunk) => sent.push(chunk) })
    url.port = String(proxy.port)
    db = postgresDatabase(url.toString(), 1)
    await db.rows(sql`create table copied (id int primary key, note text)`)
  })
  afterAll(async () => {
    await db.close()
    proxy.close()
    await database.close()
  })

  const sentDuring = async (transaction: () => Promise<void>) => {
    const before = sent.types().length
    await transaction()
    await Bun.sleep(100) // anything written once the commit was answered
    return sent.types().slice(before)
  }

  test('a COPY that commits sends its rows and CopyDone, and no CopyFail after them', async () => {
    const types = await sentDuring(() => db.transaction(async (_tx, copyIn) => copyIn!(COPY_STATEMENT).commit('1\tone\n2\ttwo\n')))
    expect(types).toContain('d')
    expect(types).toContain('c')
    expect(types).not.toContain('f')
    expect((await db.rows<{ n: number }>(sql`select count(*)::int as n from copied`))[0].n).toBe(2)
  })

  test('a COPY given up still tells the server with CopyFail', async () => {
    const types = await sentDuring(() =>
      db.transaction(async (tx, copyIn) => {
        await copyIn!(COPY_STATEMENT).cancel()
        await db.rows(sql`insert into copied values (3, null)`, tx)
      }),
    )
    expect(types).toContain('f')
    expect(types).not.toContain('c')
    expect((await db.rows<{ id: number }>(sql`select id from copied order by id`)).map((r) => r.id)).toEqual([1, 2, 3])
  })
})

// Database and role settings (ALTER DATABASE / ROLE ... SET) reach a session only as it starts: a pooled
// session that failed under one the operator has since put right must not be used again.
describe.skipIf(engine !== 'postgres')('Postgres sessions started under settings since changed', () => {
  let database: TestDatabase
  let db: Database
  let admin: postgres.Sql
  let name: string
  beforeAll(async () => {
    database = await createTestDatabase()
    db = postgresDatabase(database.url!, 2)
    admin = postgres(database.url!, { max: 1, onnotice: () => {} })
    name = new URL(database.url!).pathname.slice(1)
    await db.rows(sql`create table settled (id int)`)
  })
  afterAll(async () => {
    await admin.unsafe(`alter database ${name} reset default_transaction_read_only`)
    await db.close()
    await admin.end()
    await database.close()
  })

  const insert = (id: number) =>
    db.transaction((tx) => db.rows(sql`insert into settled values (${id})`, tx)).then(
      () => 'committed',
      (error: unknown) => (error as { cause?: { code?: string }; code?: string }).cause?.code ?? (error as { code?: string }).code,
    )

  test('read-only (default_transaction_read_only): failed as storage while it lasts, and the first transaction after it is put right commits', async () => {
    await admin.unsafe(`alter database ${name} set default_transaction_read_only = on`)
    await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    // The first may still meet the sessions just terminated (CONNECTION_CLOSED, 57P01).
    await Promise.all([insert(1), insert(2)])
    for (let i = 0; i < 2; i++) {
      const failed = await Promise.all([insert(1), insert(2)])
      expect(failed).toEqual(['25006', '25006'])
    }
    expect(faultOf(await db.transaction((tx) => db.rows(sql`insert into settled values (1)`, tx)).catch((error: unknown) => error))).toBe('storage')
    await admin.unsafe(`alter database ${name} reset default_transaction_read_only`)
    expect(await insert(3)).toBe('committed')
    expect(await Promise.all([insert(4), insert(5)])).toEqual(['committed', 'committed'])
  })
})

// postgres.js keeps the statement a lost connection failed as its current one, and its end() waits
// for that statement until the timeout it is given (porsager/postgres#1130): core's stop, after the
// writer has drained, must not sit out a long one for a connection the server ended hours before.
describe.skipIf(engine !== 'postgres')('closing after the server ended a connection', () => {
  test('is done within a second', async () => {
    const database = await createTestDatabase()
    const db = postgresDatabase(database.url!, 2)
    const admin = postgres(database.url!, { max: 1, onnotice: () => {} })
    try {
      // The statement is under way when its connection is ended, so it fails whatever the timing. An
      // idle one ended was raced: the driver could see the close first and run the next on a new one.
      const running = db.rows(sql`select pg_sleep(30)`).then(() => null, (error: unknown) => error)
      const sleeping = () => admin`select pid from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(30)'`
      while ((await sleeping()).length === 0) await Bun.sleep(5)
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
      expect(await running).not.toBeNull()
      const started = performance.now()
      await db.close()
      expect(performance.now() - started).toBeLessThan(1500)
    } finally {
      await admin.end()
      await database.close()
    }
  })
})
