import { afterAll, afterEach, describe, expect, setSystemTime, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { apiKeys } from '@sightline/schema'
import { postgresDatabase } from '@sightline/core/db'
import { createLogger } from '@sightline/core/log'
import { createKeyCache } from '@sightline/core/projects/key-cache'
import { hashKey } from '@sightline/core/projects/keys'
import { createProject, revokeKey } from '@sightline/core/projects/service'
import { proxiedTestDatabase } from '../../helpers/breakable-database'
import { createTestDatabase, engine } from '../../helpers/database'
import { partitionableProxy } from '../../helpers/partitionable-proxy'
import { within } from '../../helpers/poll'

const postgresOnly = engine === 'postgres' ? describe : describe.skip
const log = createLogger('error')

postgresOnly('the key cache when its LISTEN connection is lost', () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })

  async function setup() {
    const { database, proxy, url } = await proxiedTestDatabase()
    const cached = postgresDatabase(url)
    const cache = createKeyCache(cached, log)
    await cache.start()
    cleanups.push(() => database.close(), () => proxy.close(), () => cached.close(), () => cache.stop())
    const project = await createProject(database.db.orm, { name: 'listen' })
    return { database, proxy, cache, project, cached }
  }

  test('a LISTEN connection killed by the server is listened on again: a revocation still lands at once', async () => {
    const { database, cache, project } = await setup()
    const key = project.keys.production
    expect(await cache.resolve(key)).not.toBeNull()
    await database.db.rows(sql`select pg_terminate_backend(pid) from pg_stat_activity where query ilike 'listen%' and datname = current_database()`)
    await Bun.sleep(300)
    await revokeKey(database.db, project.projectId, key)
    expect(await within(1000, async () => (await cache.resolve(key)) === null)).toBeLessThan(200)
  })

  test('a key revoked while the database was out of reach is refused once it is back, and later revocations land at once', async () => {
    const { database, proxy, cache, project, cached } = await setup()
    const [live, dev] = [project.keys.production, project.keys.development]
    expect(await cache.resolve(live)).not.toBeNull()
    expect(await cache.resolve(dev)).not.toBeNull()
    proxy.stop()
    await Bun.sleep(3000)
    await revokeKey(database.db, project.projectId, live)
    proxy.resume()
    while (!(await cached.rows(sql`select 1`).then(() => true, () => false))) await Bun.sleep(5)
    // As soon as this process can store again, the key revoked meanwhile is refused.
    expect(await cache.resolve(live)).toBeNull()
    await Bun.sleep(1000)
    expect(await cache.resolve(dev)).not.toBeNull()
    await revokeKey(database.db, project.projectId, dev)
    expect(await within(1000, async () => (await cache.resolve(dev)) === null)).toBeLessThan(200)
  }, 30000)
})

postgresOnly('the key cache when its LISTEN connection goes silent', () => {
  afterEach(() => setSystemTime())
  // Also with the system clock set back an hour meanwhile (NTP, a resumed virtual machine): how long
  // heartbeats go unheard is a duration, which must not grow by the hour.
  for (const clock of ['as it is', 'set back an hour'] as const)
  test(`a revocation made while the LISTEN connection is silently dead stops the key within seconds, not the TTL (the clock ${clock})`, async () => {
    const { database, proxy, url } = await proxiedTestDatabase()
    const listening = postgresDatabase(url)
    // Lookups reach the database directly; only the LISTEN connection goes through the proxy.
    const db = { ...database.db, listen: listening.listen }
    const cache = createKeyCache(db, log)
    await cache.start()
    try {
      const project = await createProject(database.db.orm, { name: 'silent' })
      const key = project.keys.production
      expect(await cache.resolve(key)).not.toBeNull()
      if (clock === 'set back an hour') setSystemTime(new Date(Date.now() - 3_600_000))
      proxy.freeze()
      await revokeKey(database.db, project.projectId, key)
      // Cached keys are trusted while the cache hears its own heartbeats (every second): not for the TTL.
      expect(await within(8000, async () => (await cache.resolve(key)) === null)).toBeLessThan(4500)
      // Meanwhile every key is looked up: the others still work.
      expect(await cache.resolve(project.keys.development)).not.toBeNull()
    } finally {
      await cache.stop()
      proxy.resume()
      await listening.close()
      proxy.close()
      await database.close()
    }
  }, 20000)
})

postgresOnly('the key cache when its LISTEN connection stays silently dead', () => {
  test('it is made again: the cache hears its heartbeats, trusts cached keys again, and a revocation lands by NOTIFY', async () => {
    const database = await createTestDatabase()
    const target = new URL(database.url!)
    const proxy = partitionableProxy({ host: target.hostname, port: Number(target.port) })
    target.port = String(proxy.port)
    const listening = postgresDatabase(target.toString())
    // Lookups and heartbeats reach the database directly; only the listening connection goes through the proxy.
    const db = { ...database.db, listen: listening.listen, reconnectListening: listening.reconnectListening }
    const cache = createKeyCache(db, log)
    await cache.start()
    const listeners = async (since: Date) =>
      (await database.db.rows<{ n: number }>(sql`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and query ilike 'listen%' and backend_start > ${since.toISOString()}::timestamptz`))[0].n
    try {
      const project = await createProject(database.db.orm, { name: 'deaf' })
      const [live, dev] = [project.keys.production, project.keys.development]
      expect(await cache.resolve(live)).not.toBeNull()
      const cut = new Date()
      // The listening connection dies without a word (a NAT forgot it); the network itself works.
      proxy.partition()
      proxy.heal()
      // Heartbeats the database takes go unheard for 10 s: the connection is made again, not left to TCP.
      expect(await within(20_000, async () => (await listeners(cut)) > 0)).toBeLessThan(16_000)
      // Heard again, cached keys are trusted again: a key cached now is not looked up on each request.
      await Bun.sleep(1_500)
      expect(await cache.resolve(dev)).not.toBeNull()
      await database.db.orm.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.keyHash, hashKey(dev)))
      expect(await cache.resolve(dev)).not.toBeNull()
      // And a revocation lands at once, by NOTIFY on the new connection.
      await revokeKey(database.db, project.projectId, live)
      expect(await within(1000, async () => (await cache.resolve(live)) === null)).toBeLessThan(200)
    } finally {
      await cache.stop()
      await listening.close()
      proxy.close()
      await database.close()
    }
  }, 30_000)
})

postgresOnly('the key cache does not close its listening connection in a loop', () => {
  test('not while the database is out of reach (its heartbeats are not taken), and ever more rarely while it stays deaf', async () => {
    const database = await createTestDatabase()
    const target = new URL(database.url!)
    const proxy = partitionableProxy({ host: target.hostname, port: Number(target.port) })
    target.port = String(proxy.port)
    const listening = postgresDatabase(target.toString())
    const { proxy: outage, url } = await proxiedTestDatabase()
    const reachable = postgresDatabase(url)
    let reconnections = 0
    const reconnectListening = () => {
      reconnections++
      listening.reconnectListening!()
    }
    try {
      // Down: every connection refused, heartbeats too, for many times relistenAfterMs.
      const down = createKeyCache({ ...reachable, reconnectListening }, log, { heartbeatMs: 100, relistenAfterMs: 300 })
      await down.start()
      outage.stop()
      await Bun.sleep(2_000)
      await down.stop()
      expect(reconnections).toBe(0)
      outage.resume()

      // Up, but every listening connection made goes silent at once: reconnected after 300, 600, 1200 ms...
      const deaf = createKeyCache({ ...database.db, listen: listening.listen, reconnectListening }, log, { heartbeatMs: 100, relistenAfterMs: 300 })
      await deaf.start()
      proxy.partition()
      await Bun.sleep(3_000)
      await deaf.stop()
      expect(reconnections).toBeGreaterThanOrEqual(2)
      expect(reconnections).toBeLessThanOrEqual(3)
    } finally {
      outage.close()
      await reachable.close()
      await listening.close()
      proxy.close()
      await database.close()
    }
  }, 30_000)
})
