import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresDatabase } from '@sightline/core/db'
import { startCore } from '../helpers/core'
import { createTestDatabase, engine } from '../helpers/database'
import { partitionableProxy, type PartitionableProxy } from '../helpers/partitionable-proxy'
import type { PostgresServer } from '../helpers/postgres-server'
import { startTlsPostgresServer, tlsPostgresServerMissing } from '../helpers/tls-postgres-server'

// A partition drops packets without a FIN or RST: postgres.js waits on such a connection for as long
// as TCP retransmits (some 15 minutes), long after the network is back.
//
// The same tests run twice: on the shared server, and over TLS (sslmode=require: what managed Postgres
// services ask for), where postgres.js reads and writes through a TLS socket wrapped around the one
// core made. The TLS server is this file's own, with ssl=on (the shared one has no certificate), and
// runs only where one can be started (its binaries and openssl, as CI has).

interface Target {
  /** Said after the describe's name: which run it is. */
  over: string
  skip: boolean
  tls: boolean
  /** Registers, inside the target's describe, what all its tests share (a server). */
  prepare(): void
  /** A migrated database through a partitionable proxy; `close` drops what only this test used. */
  proxied(): Promise<{ proxy: PartitionableProxy; url: string; close(): Promise<void> }>
}

function throughProxy(url: string) {
  const target = new URL(url)
  const proxy = partitionableProxy({ host: target.hostname, port: Number(target.port) })
  target.port = String(proxy.port)
  return { proxy, target }
}

const plain: Target = {
  over: '',
  skip: engine !== 'postgres',
  tls: false,
  prepare() {},
  async proxied() {
    const own = await createTestDatabase()
    const { proxy, target } = throughProxy(own.url!)
    return { proxy, url: target.toString(), close: () => own.close() }
  },
}

const tlsMissing = tlsPostgresServerMissing()
if (engine === 'postgres' && tlsMissing) console.warn(`postgres-partition over TLS: skipped: ${tlsMissing}`)
let tlsServer: PostgresServer | undefined
const overTls: Target = {
  over: ' over TLS',
  skip: engine !== 'postgres' || tlsMissing !== undefined,
  tls: true,
  prepare() {
    beforeAll(async () => {
      tlsServer = await startTlsPostgresServer()
      const db = postgresDatabase(tlsServer.url)
      await db.migrate()
      await db.close()
    })
    afterAll(async () => {
      await tlsServer?.close()
    })
  },
  async proxied() {
    // The server's one database, asking for TLS as a managed service's URL does.
    const { proxy, target } = throughProxy(tlsServer!.url)
    target.searchParams.set('sslmode', 'require')
    return { proxy, url: target.toString(), close: async () => {} }
  },
}

/** How long `check` takes to hold, asked every 100 ms; fails after `ms`. */
async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now()
  while (!(await check())) {
    if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await Bun.sleep(100)
  }
  return performance.now() - started
}

for (const target of [plain, overTls]) {
  /** Over TLS, that the pool's connection is a TLS one: the mends must not have made it plain. */
  const expectTlsAsAsked = async (db: ReturnType<typeof postgresDatabase>) => {
    if (!target.tls) return
    expect((await db.rows<{ ssl: boolean }>(sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`))[0]?.ssl).toBe(true)
  }

  /** Runs `use` on a pool of `max` connections through the target's proxy, each given up after `silentConnectionMs` of silence. */
  const onProxiedPool = async (max: number, silentConnectionMs: number, use: (db: ReturnType<typeof postgresDatabase>) => Promise<void>) => {
    const { proxy, url, close } = await target.proxied()
    const db = postgresDatabase(url, max, { silentConnectionMs })
    try {
      await use(db)
    } finally {
      proxy.close()
      await db.close().catch(() => {})
      await close()
    }
  }

  describe.skipIf(target.skip)(`a network partition between core and Postgres${target.over}`, () => {
    if (!target.skip) target.prepare()

    test('once it heals, writes are stored and /health is ok again within seconds, not when TCP gives up', async () => {
      const { proxy, url, close } = await target.proxied()
      // Connections silent for 2 s are given up (30 s in production), the writer's commits at 1 s (10 s).
      const db = postgresDatabase(url, 10, { silentConnectionMs: 2_000 })
      const core = await startCore({ database: { db, close: () => db.close() }, writer: { failFastMs: 200, commitTimeoutMs: 1_000 } })
      const write = async () => (await core.post('/api/ingestion/customEvent', { sessionId: 's', eventName: 'e' })).status
      const health = async () => (await core.request('/health')).status
      try {
        await expectTlsAsAsked(db)
        // Every connection of the pool open, so that the partition catches all of them.
        await Promise.all(Array.from({ length: 30 }, () => db.rows(sql`select pg_sleep(0.05)`)))
        expect(await Promise.all([write(), write()])).toEqual([200, 200])
        expect(await health()).toBe(200)

        proxy.partition()
        for (let i = 0; i < 4; i++) expect(await Promise.all([write(), write(), health()])).toEqual([503, 503, 503])
        proxy.heal()

        // Before, every connection stayed stuck (under TLS too): each write waited out the commit timeout for a 503.
        expect(await within(6_000, async () => (await write()) === 200)).toBeLessThan(6_000)
        expect(await within(3_000, async () => (await health()) === 200)).toBeLessThan(3_000)
        expect(await Promise.all(Array.from({ length: 10 }, write))).toEqual(Array(10).fill(200))
        await expectTlsAsAsked(db)
      } finally {
        proxy.close()
        await core.close().catch(() => {})
        await db.close().catch(() => {})
        await close()
      }
    }, 60_000)

    test('a connection slow to answer, or idle on LISTEN, is not given up', async () => {
      await onProxiedPool(2, 1_500, async (db) => {
        // Silent for most of the limit, twice on the same connection: the silence counts from the last answer.
        expect(await db.rows(sql`select pg_sleep(1), 1 as n`)).toEqual([{ pg_sleep: '', n: 1 }])
        expect(await db.rows(sql`select pg_sleep(1), 2 as n`)).toEqual([{ pg_sleep: '', n: 2 }])
        const heard: string[] = []
        let connects = 0
        await db.listen('partition_test', (payload) => void heard.push(payload), () => void connects++)
        // The LISTEN connection has nothing outstanding: idle for twice the limit, it is kept.
        await Bun.sleep(3_000)
        await db.notify('partition_test', 'still here')
        await within(2_000, async () => heard.length > 0)
        expect(heard).toEqual(['still here'])
        expect(connects).toBe(1)
      })
    }, 30_000)

    test('a statement silent for longer than the limit fails as a lost connection, and the pool connects again', async () => {
      await onProxiedPool(1, 1_000, async (db) => {
        await expectTlsAsAsked(db)
        await expect(db.rows(sql`select pg_sleep(3)`)).rejects.toThrow()
        expect(await db.rows(sql`select 1 as n`)).toEqual([{ n: 1 }])
        await expectTlsAsAsked(db)
      })
    }, 30_000)
  })
}
