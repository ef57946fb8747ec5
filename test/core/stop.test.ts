import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { createTestDatabase, engine, migratedSnapshot, type TestDatabase } from '../helpers/database'
import { requestByHand, spawnCore, type CoreProcess } from '../helpers/process'
import { proxiedTestDatabase } from '../helpers/breakable-database'

// How a core process stops when it is asked to while something keeps it busy: a client that never
// finishes its request, a database that stopped answering, an operator who asks twice. Every stop
// ends in bounded time, and nothing is acknowledged that was not stored.

const dataDirs: string[] = []
const databases: TestDatabase[] = []
afterAll(async () => {
  for (const database of databases) await database.close()
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

async function ownEnv(): Promise<Record<string, string>> {
  if (engine === 'postgres') {
    const database = await createTestDatabase()
    databases.push(database)
    return { DATABASE_URL: database.url! }
  }
  const dir = mkdtempSync(join(tmpdir(), 'sightline-stop-'))
  dataDirs.push(dir)
  await (await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
  return { DATA_DIR: dir }
}

const keyOf = (core: CoreProcess) => core.output().match(/shown this once: +(sl_dev_\S+)/)![1]

/** A request whose body is announced but only trickles in: the connection stays busy until cut. */
async function tricklingRequest(core: CoreProcess, key: string) {
  const head = `POST /api/ingestion/customEvent HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer ${key}\r\nContent-Length: 1000\r\n\r\n`
  const request = await requestByHand(core.url, `${head}{"sessionId":"s",`)
  const trickle = setInterval(() => request.send(' '), 200)
  return {
    answer: request.answer,
    closed: request.closed,
    end() {
      clearInterval(trickle)
      request.end()
    },
  }
}

async function timedExit(core: CoreProcess): Promise<{ exitCode: number | null; ms: number }> {
  const started = performance.now()
  const exitCode = await Promise.race([core.proc.exited, Bun.sleep(20_000).then(() => null)])
  return { exitCode, ms: performance.now() - started }
}

describe('stopping', () => {
  test('SIGTERM with a client still sending its body: cut off unanswered after the grace period, and the process exits', async () => {
    const core = await spawnCore(await ownEnv())
    const slow = await tricklingRequest(core, keyOf(core))
    try {
      await Bun.sleep(200)
      core.proc.kill('SIGTERM')
      const { exitCode, ms } = await timedExit(core)
      expect(exitCode).toBe(0)
      // The grace period is 5 s.
      expect(ms).toBeGreaterThan(4_000)
      expect(ms).toBeLessThan(8_000)
      expect(slow.answer()).toBe('')
      expect(slow.closed()).toBe(true)
    } finally {
      slow.end()
      core.proc.kill('SIGKILL')
    }
  })

  test('a second SIGTERM exits at once', async () => {
    const core = await spawnCore(await ownEnv())
    const slow = await tricklingRequest(core, keyOf(core))
    try {
      await Bun.sleep(200)
      core.proc.kill('SIGTERM')
      await Bun.sleep(300)
      expect(core.proc.exitCode).toBeNull()
      core.proc.kill('SIGTERM')
      const { exitCode, ms } = await timedExit(core)
      expect(exitCode).toBe(1)
      expect(ms).toBeLessThan(1_000)
      expect(core.output()).toContain('"msg":"stopping at once"')
    } finally {
      slow.end()
      core.proc.kill('SIGKILL')
    }
  })
})

describe.skipIf(engine !== 'postgres')('stopping while the database does not answer', () => {
  test('SIGTERM with the database host unresponsive (connections open, nothing answered): the process exits soon', async () => {
    const { database, proxy, url } = await proxiedTestDatabase()
    databases.push(database)
    const core = await spawnCore({ DATABASE_URL: url })
    try {
      const sent = await fetch(`${core.url}/api/ingestion/customEvent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keyOf(core)}` },
        body: JSON.stringify({ sessionId: 'partition', eventName: 'before' }),
      })
      expect(sent.status).toBe(200)
      proxy.freeze()
      core.proc.kill('SIGTERM')
      const { exitCode, ms } = await timedExit(core)
      expect(exitCode).toBe(0)
      expect(ms).toBeLessThan(3_000)
    } finally {
      core.proc.kill('SIGKILL')
      proxy.close()
    }
  })
})
