import { afterAll, describe, expect, test } from 'bun:test'
import { fullGC, heapStats } from 'bun:jsc'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '@sightline/core/config'
import { createLogger } from '@sightline/core/log'
import { BUNDLED_GEOIP_DB, openGeoDatabase } from '@sightline/core/ingest/geo/reader'
import { openGeoWorker } from '@sightline/core/ingest/geo/worker-client'
import { createTestDatabase, engine, type TestDatabase } from '../../helpers/database'
import { spawnCore } from '../../helpers/process'

// GeoIP lookups run on a worker thread of their own, the database mapped there: on core's main
// thread JavaScriptCore counts the mapped file (130 MB) as heap and lets garbage grow in proportion.

const MB = 1024 * 1024
const ADDRESSES = ['8.8.8.8', '1.1.1.1', '81.2.69.142', '2001:4860:4860::8888', '::ffff:9.9.9.9', '10.0.0.1', '127.0.0.1', '::1', 'not an address', '']

/** A logger that keeps what it is told. */
function keptLog() {
  const lines: { level: string; message: string }[] = []
  const log = createLogger('debug', (line) => {
    const { level, msg } = JSON.parse(line)
    lines.push({ level, message: msg })
  })
  return { log, lines }
}

const fixture = (name: string) => join(import.meta.dir, '..', 'fixtures', name)

const until = async (condition: () => boolean | Promise<boolean>, ms = 5_000) => {
  for (let waited = 0; !(await condition()) && waited < ms; waited += 20) await Bun.sleep(20)
}

describe('GeoIP worker', () => {
  test("locates as the database read on this thread does, and this thread's heap does not count the mapped file", async () => {
    fullGC()
    const before = heapStats().extraMemorySize
    const geo = await openGeoWorker(BUNDLED_GEOIP_DB, keptLog().log)
    try {
      const located = await Promise.all(ADDRESSES.map((address) => geo.lookup(address)))
      expect(heapStats().extraMemorySize - before).toBeLessThan(16 * MB)

      // The same files opened here: the measure above would have seen them.
      fullGC()
      const beforeHere = heapStats().extraMemorySize
      const here = openGeoDatabase()
      expect(heapStats().extraMemorySize - beforeHere).toBeGreaterThan(100 * MB)
      expect(located).toEqual(ADDRESSES.map((address) => here.lookup(address)))
      expect(located.filter(Boolean).length).toBe(5)
      // Asked again, from what was kept.
      expect(await geo.lookup('8.8.8.8')).toEqual(located[0])
    } finally {
      geo.close()
    }
  })

  test('files it cannot open fail as they would on this thread: ConfigError, naming GEOIP_DB', async () => {
    const { log } = keptLog()
    const missing = await openGeoWorker(['/nonexistent/city.mmdb'], log).catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(ConfigError)
    expect(String((missing as Error).message)).toBe('GEOIP_DB: /nonexistent/city.mmdb does not exist')
    const notADatabase = await openGeoWorker([join(import.meta.dir, 'geo-worker.test.ts')], log).catch((error: unknown) => error)
    expect(notADatabase).toBeInstanceOf(ConfigError)
    expect(String((notADatabase as Error).message)).toMatch(/^GEOIP_DB: .* is not a MaxMind-format database/)
  })

  test('a worker that fails before it opened the database fails the start, saying why', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'sightline-geo-worker-'))
    try {
      const url = join(scratch, 'worker.ts')
      await Bun.write(url, 'throw new Error("no thread for you")')
      const failed = await openGeoWorker(BUNDLED_GEOIP_DB, keptLog().log, { url }).catch((error: unknown) => error)
      expect(String(failed)).toBe('Error: the GeoIP worker ended before it opened the database: no thread for you')
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  test('a worker that ends: the lookup under way is not located, the log says so, and a later lookup starts it again', async () => {
    const { log, lines } = keptLog()
    const geo = await openGeoWorker(BUNDLED_GEOIP_DB, log, { url: fixture('geo-worker-that-ends.ts'), restartMs: 300 })
    try {
      expect((await geo.lookup('8.8.8.8'))?.country).toBe('US')
      expect(await geo.lookup('8.8.4.4')).toBeNull() // the worker ended on it
      await until(() => lines.some((line) => line.level === 'error'))
      expect(lines).toEqual([{ level: 'error', message: 'the GeoIP worker ended; addresses are not located until it is started again' }])
      // Not started again at once (a worker that ends at every start would be restarted in a loop)...
      expect(await geo.lookup('8.8.4.4')).toBeNull()
      await Bun.sleep(350)
      // ...but by a lookup once restartMs has passed, which is not located itself; the next ones are.
      expect(await geo.lookup('8.8.4.4')).toBeNull()
      await until(async () => (await geo.lookup('8.8.4.4')) !== null)
      expect((await geo.lookup('8.8.4.4'))?.country).toBe('US')
    } finally {
      geo.close()
    }
  })

  test('a lookup the worker does not answer in time is not located; private addresses never wait', async () => {
    const geo = await openGeoWorker(BUNDLED_GEOIP_DB, keptLog().log, { url: fixture('geo-worker-that-stalls.ts'), lookupTimeoutMs: 200 })
    try {
      const started = performance.now()
      expect(await geo.lookup('10.1.2.3')).toBeNull()
      expect(performance.now() - started).toBeLessThan(50)
      expect(await geo.lookup('8.8.8.8')).toBeNull()
      expect(performance.now() - started).toBeGreaterThanOrEqual(190)
      expect(performance.now() - started).toBeLessThan(1_000)
    } finally {
      geo.close()
    }
  })
})

describe('core started as a process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sightline-geo-worker-'))
  let database: TestDatabase | undefined
  afterAll(async () => {
    await database?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('locates the forwarded client of a trusted proxy through its worker', async () => {
    if (engine === 'postgres') database = await createTestDatabase()
    const core = await spawnCore({ TRUSTED_PROXIES: '127.0.0.1', ...(database ? { DATABASE_URL: database.url! } : { DATA_DIR: dataDir }) })
    try {
      const key = core.output().match(/development key, shown this once: +(sl_dev_\S+)/)?.[1]
      const answer = await fetch(`${core.url}/api/ingestion/ip-info`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-for': '8.8.8.8' },
        body: JSON.stringify({ sessionId: 'located' }),
      })
      expect(answer.status).toBe(200)
      expect((await answer.json()).geo).toEqual(openGeoDatabase().lookup('8.8.8.8'))
    } finally {
      await core.stop()
    }
  })
})
