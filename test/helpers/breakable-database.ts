import { postgresDatabase } from '@sightline/core/db'
import { startCore, type StartCoreOptions, type TestCore } from './core'
import { createTestDatabase, engine } from './database'
import { startTcpProxy } from './tcp-proxy'

export interface BreakableCore {
  core: TestCore
  /** What core sees when its database server stops: on Postgres every connection drops; embedded, PGlite closes. */
  breakDatabase(): void
  /** Postgres only: the server is reachable again. */
  repair(): void
  close(): Promise<void>
}

/** A core whose database can be taken away: the outage tests of health, durability and every route. */
export async function coreWithBreakableDatabase(options: Omit<StartCoreOptions, 'database'> = {}): Promise<BreakableCore> {
  const own = await createTestDatabase()
  if (engine === 'embedded') {
    const core = await startCore({ ...options, database: own })
    return { core, breakDatabase: () => void own.db.close(), repair: () => {}, close: () => core.close() }
  }
  const target = new URL(own.url!)
  const proxy = startTcpProxy({ host: target.hostname, port: Number(target.port) })
  const proxied = new URL(own.url!)
  proxied.port = String(proxy.port)
  const db = postgresDatabase(proxied.toString())
  const core = await startCore({ ...options, database: { db, close: () => db.close() }, writer: { failFastMs: 200, ...options.writer } })
  return {
    core,
    breakDatabase: () => proxy.stop(),
    repair: () => proxy.resume(),
    async close() {
      await core.close().catch(() => {})
      await db.close().catch(() => {})
      proxy.close()
      await own.close()
    },
  }
}
