import type { Sql } from 'postgres'
import { postgresDatabase } from '@sightline/core/db'
import { startCore, type StartCoreOptions, type TestCore } from './core'
import { createTestDatabase, engine, type TestDatabase } from './database'
import { startTcpProxy, type TcpProxy } from './tcp-proxy'

/** Postgres only: a fresh test database and a URL that reaches it through a proxy that can cut or freeze it. */
export async function proxiedTestDatabase(): Promise<{ database: TestDatabase; proxy: TcpProxy; url: string }> {
  const database = await createTestDatabase()
  const target = new URL(database.url!)
  const proxy = startTcpProxy({ host: target.hostname, port: Number(target.port) })
  const proxied = new URL(database.url!)
  proxied.port = String(proxy.port)
  return { database, proxy, url: proxied.toString() }
}

/**
 * Postgres only: holds every commit of core until `release()`. Each commit counts usage, and the
 * usage counters are locked; resolves once they are.
 */
export async function holdCommits(admin: Sql): Promise<{ release(): Promise<void> }> {
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => (locked = resolve))
  const holder = admin.begin(async (tx) => {
    await tx`lock table usage_counters in exclusive mode`
    locked()
    await held
  })
  await isLocked
  return {
    async release() {
      release()
      await holder
    },
  }
}

export interface BreakableCore {
  core: TestCore
  /** What core sees when its database server stops: on Postgres every connection drops; embedded, PGlite closes. */
  breakDatabase(): void
  /**
   * What core sees when its database stops answering: on Postgres its host passes nothing more, the
   * connections left open (a partition); embedded, a transaction holds PGlite, which every statement waits for.
   */
  freezeDatabase(): void
  /** Postgres only: the server is reachable again. */
  repair(): void
  close(): Promise<void>
}

/** A core whose database can be taken away: the outage tests of health, durability and every route. */
export async function coreWithBreakableDatabase(options: Omit<StartCoreOptions, 'database'> = {}): Promise<BreakableCore> {
  if (engine === 'embedded') {
    const own = await createTestDatabase()
    const core = await startCore({ ...options, database: own })
    let thaw = () => {}
    return {
      core,
      breakDatabase: () => void own.db.close(),
      freezeDatabase: () => void own.db.transaction(() => new Promise<void>((resolve) => (thaw = resolve))),
      repair: () => {},
      async close() {
        thaw()
        await core.close()
      },
    }
  }
  const { database: own, proxy, url } = await proxiedTestDatabase()
  const db = postgresDatabase(url)
  const core = await startCore({ ...options, database: { db, close: () => db.close() }, writer: { failFastMs: 200, ...options.writer } })
  return {
    core,
    breakDatabase: () => proxy.stop(),
    freezeDatabase: () => proxy.freeze(),
    repair: () => proxy.resume(),
    async close() {
      await core.close().catch(() => {})
      await db.close().catch(() => {})
      proxy.close()
      await own.close()
    },
  }
}
