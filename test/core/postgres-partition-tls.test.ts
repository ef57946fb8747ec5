import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresDatabase } from '@sightline/core/db'
import { startCore } from '../helpers/core'
import { engine } from '../helpers/database'
import { partitionableProxy } from '../helpers/partitionable-proxy'
import type { PostgresServer } from '../helpers/postgres-server'
import { startTlsPostgresServer, tlsPostgresServerMissing } from '../helpers/tls-postgres-server'

// postgres-partition.test.ts again, over TLS (sslmode=require: what managed Postgres services ask
// for). postgres.js then reads and writes through a TLS socket wrapped around the one core made, and
// a partition left such a connection stuck for as long as TCP retransmits (some 15 minutes). The
// server is this test's own, with ssl=on (the shared one has no certificate); Postgres only, and only
// where a server can be started (its binaries and openssl, as CI has).

const missing = tlsPostgresServerMissing()
const runs = engine === 'postgres' && missing === undefined
if (engine === 'postgres' && missing) console.warn(`postgres-partition-tls: skipped: ${missing}`)

let server: PostgresServer | undefined
beforeAll(async () => {
  if (!runs) return
  server = await startTlsPostgresServer()
  const db = postgresDatabase(server.url)
  await db.migrate()
  await db.close()
})
afterAll(async () => {
  await server?.close()
})

/** The TLS server through a partitionable proxy, asking for TLS as a managed service's URL does. */
function proxiedTls() {
  const target = new URL(server!.url)
  const proxy = partitionableProxy({ host: target.hostname, port: Number(target.port) })
  target.port = String(proxy.port)
  target.searchParams.set('sslmode', 'require')
  return { proxy, url: target.toString() }
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

const overTls = async (db: ReturnType<typeof postgresDatabase>) =>
  (await db.rows<{ ssl: boolean }>(sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`))[0]?.ssl

describe.skipIf(!runs)('a network partition between core and Postgres over TLS', () => {
  test('once it heals, writes are stored and /health is ok again within seconds, not when TCP gives up', async () => {
    const { proxy, url } = proxiedTls()
    // Connections silent for 2 s are given up (30 s in production), the writer's commits at 1 s (10 s).
    const db = postgresDatabase(url, 10, { silentConnectionMs: 2_000 })
    const core = await startCore({ database: { db, close: () => db.close() }, writer: { failFastMs: 200, commitTimeoutMs: 1_000 } })
    const write = async () => (await core.post('/api/ingestion/customEvent', { sessionId: 's', eventName: 'e' })).status
    const health = async () => (await core.request('/health')).status
    try {
      expect(await overTls(db)).toBe(true)
      // Every connection of the pool open, so that the partition catches all of them.
      await Promise.all(Array.from({ length: 30 }, () => db.rows(sql`select pg_sleep(0.05)`)))
      expect(await Promise.all([write(), write()])).toEqual([200, 200])
      expect(await health()).toBe(200)

      proxy.partition()
      for (let i = 0; i < 4; i++) expect(await Promise.all([write(), write(), health()])).toEqual([503, 503, 503])
      proxy.heal()

      // Before, every connection stayed stuck under TLS: each write waited out the commit timeout for a 503.
      expect(await within(6_000, async () => (await write()) === 200)).toBeLessThan(6_000)
      expect(await within(3_000, async () => (await health()) === 200)).toBeLessThan(3_000)
      expect(await Promise.all(Array.from({ length: 10 }, write))).toEqual(Array(10).fill(200))
      expect(await overTls(db)).toBe(true)
    } finally {
      proxy.close()
      await core.close().catch(() => {})
      await db.close().catch(() => {})
    }
  }, 60_000)

  test('a statement silent for longer than the limit fails as a lost connection, and the pool connects again over TLS', async () => {
    const { proxy, url } = proxiedTls()
    const db = postgresDatabase(url, 1, { silentConnectionMs: 1_000 })
    try {
      expect(await overTls(db)).toBe(true)
      await expect(db.rows(sql`select pg_sleep(3)`)).rejects.toThrow()
      expect(await overTls(db)).toBe(true)
    } finally {
      proxy.close()
      await db.close().catch(() => {})
    }
  }, 30_000)

  test('a connection slow to answer, or idle on LISTEN, is not given up under TLS either', async () => {
    const { proxy, url } = proxiedTls()
    const db = postgresDatabase(url, 2, { silentConnectionMs: 1_500 })
    try {
      // Silent for most of the limit, twice on the same connection: the silence counts from the last answer.
      expect(await db.rows(sql`select pg_sleep(1), 1 as n`)).toEqual([{ pg_sleep: '', n: 1 }])
      expect(await db.rows(sql`select pg_sleep(1), 2 as n`)).toEqual([{ pg_sleep: '', n: 2 }])
      const heard: string[] = []
      let connects = 0
      await db.listen('partition_tls_test', (payload) => void heard.push(payload), () => void connects++)
      // The LISTEN connection has nothing outstanding: idle for twice the limit, it is kept.
      await Bun.sleep(3_000)
      await db.notify('partition_tls_test', 'still here')
      await within(2_000, async () => heard.length > 0)
      expect(heard).toEqual(['still here'])
      expect(connects).toBe(1)
    } finally {
      proxy.close()
      await db.close().catch(() => {})
    }
  }, 30_000)
})
