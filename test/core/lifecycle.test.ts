import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { createLogger } from '@sightline/core/log'
import { startServices } from '@sightline/core/services'
import { createTestDatabase, engine } from '../helpers/database'
import { ROOT, spawnCore, tricklingRequest, type CoreProcess } from '../helpers/process'
import { ownDatabases, welcomeKeyOf } from '../helpers/own-databases'

// What an operator reads of a stop and of a failed start, and what either leaves behind: the log says
// whether a stop was clean or cut requests off, and a start that failed leaves the embedded database
// shut down, not as after a crash.

const own = ownDatabases('sightline-lifecycle-')
afterAll(() => own.close())
const logLines = (core: CoreProcess) =>
  core
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

/** What the process printed reaches the test through a pipe, after it exited: waits for its last line. */
async function printedAll(core: CoreProcess) {
  for (let waited = 0; !core.stdout().includes('"msg":"stopped"') && waited < 2_000; waited += 20) await Bun.sleep(20)
}

/**
 * The cluster state of an embedded database, from `global/pg_control` (ControlFileData in Postgres's
 * pg_control.h: system identifier, 8 bytes, two 4-byte version numbers, then the state). 1 is "shut
 * down"; 6, "in production", is what a process that ended without closing it leaves, to be recovered.
 */
const DB_SHUTDOWNED = 1
const clusterState = (dataDir: string) => readFileSync(join(dataDir, 'pglite', 'global', 'pg_control')).readUInt32LE(16)

describe('what a stop logs', () => {
  test('a clean stop ends with a "stopped" line, and cuts nothing off', async () => {
    const core = await spawnCore(await own.env())
    const sent = await fetch(`${core.url}/api/ingestion/customEvent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${welcomeKeyOf(core)}` },
      body: JSON.stringify({ sessionId: 'clean-stop', eventName: 'hello' }),
    })
    expect(sent.status).toBe(200)
    // Its log line is written after its answer, and comes through a pipe: the stop's lines come after it.
    for (let waited = 0; !core.stdout().includes('"msg":"request"') && waited < 2_000; waited += 20) await Bun.sleep(20)
    core.proc.kill('SIGTERM')
    expect(await core.proc.exited).toBe(0)
    await printedAll(core)
    const messages = logLines(core).map((line) => line.msg)
    expect(messages.at(-1), core.output()).toBe('stopped')
    expect(messages).not.toContain('requests still under way cut off unanswered')
  })

  test('a request still under way after the grace period is cut off, and the log says how many and after how long', async () => {
    const core = await spawnCore(await own.env())
    const slow = await tricklingRequest(core, welcomeKeyOf(core))
    try {
      await Bun.sleep(200)
      core.proc.kill('SIGTERM')
      expect(await core.proc.exited).toBe(0)
      expect(slow.answer()).toBe('')
      await printedAll(core)
      const cut = logLines(core).find((line) => line.msg === 'requests still under way cut off unanswered')
      expect(cut, core.output()).toMatchObject({ level: 'warn', requests: 1, afterMs: 5_000 })
      expect(logLines(core).map((line) => line.msg)).toContain('stopped')
    } finally {
      slow.end()
      core.proc.kill('SIGKILL')
    }
  }, 20_000)
})

describe('a start that fails once the database is open', () => {
  test('a port already taken: exit 1 with one line that names it, and the embedded database is left shut down', async () => {
    const env = await own.env()
    const taken = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(taken.port), LOG_LEVEL: 'info', ...env },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
      const [, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      clearTimeout(timer)
      expect(exitCode).toBe(1)
      expect(stderr).toStartWith(`sightline: cannot listen on 127.0.0.1:${taken.port} (HOST, PORT)`)
      // Left as after a crash, the next start would replay its write-ahead log first.
      if (env.DATA_DIR) expect(clusterState(env.DATA_DIR)).toBe(DB_SHUTDOWNED)
    } finally {
      taken.stop(true)
    }
    // The port freed, the next start serves.
    const again = await spawnCore(env)
    try {
      expect((await fetch(`${again.url}/health`)).status).toBe(200)
    } finally {
      await again.stop()
    }
    if (env.DATA_DIR) expect(clusterState(env.DATA_DIR)).toBe(DB_SHUTDOWNED)
  }, 40_000)
})

describe.skipIf(engine !== 'postgres')('stopping while a presence sweep waits on a lock', () => {
  // A sweep has no deadline of its own, and one waits as long as another session holds a lock on its
  // tables (a newer core migrating them in a rolling deploy, an operator's ALTER TABLE). A stop
  // awaited it before committing and closing: core hung until the stop deadline, then exited 1.
  test('the stop goes on without it, promptly', async () => {
    const database = await createTestDatabase()
    own.databases.push(database)
    const admin = postgres(database.url!, { max: 1, onnotice: () => {} })
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    const holder = admin.begin(async (tx) => {
      await tx`lock table presence in access exclusive mode`
      locked()
      await held
    })
    await isLocked
    const lines: string[] = []
    const services = await startServices(database.db, createLogger('info', (line) => lines.push(line)), { presenceSweep: { intervalMs: 20 } })
    try {
      // The sweep is under way once the database shows it waiting for the lock.
      const waiting = () => database.db.rows<{ n: number }>(sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`)
      for (let waited = 0; (await waiting())[0].n === 0 && waited < 5_000; waited += 20) await Bun.sleep(20)
      expect((await waiting())[0].n).toBe(1)
      const started = performance.now()
      const stopped = await Promise.race([services.stop().then(() => 'stopped'), Bun.sleep(8_000).then(() => 'still waiting')])
      expect(stopped).toBe('stopped')
      expect(performance.now() - started).toBeLessThan(3_000)
      // The database closes under the sweep the stop left, as main.ts closes it: that is no failure to warn of.
      await database.db.close()
      await Bun.sleep(200)
      expect(lines.filter((line) => line.includes('presence sweep'))).toEqual([])
    } finally {
      release()
      await holder
      await admin.end()
    }
  }, 20_000)
})
