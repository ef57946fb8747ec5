import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { MIGRATION_LOCK } from '@sightline/core/db'
import { engine } from '../helpers/database'
import { requestByHand, ROOT, spawnCore, tricklingRequest, type CoreProcess } from '../helpers/process'
import { ownDatabases, welcomeKeyOf } from '../helpers/own-databases'
import { proxiedTestDatabase } from '../helpers/breakable-database'

// How a core process stops when it is asked to while something keeps it busy: a client that never
// finishes its request, a database that stopped answering, an operator who asks twice. Every stop
// ends in bounded time, and nothing is acknowledged that was not stored.

const own = ownDatabases('sightline-stop-')
afterAll(() => own.close())

async function timedExit(core: CoreProcess): Promise<{ exitCode: number | null; ms: number }> {
  const started = performance.now()
  const exitCode = await Promise.race([core.proc.exited, Bun.sleep(20_000).then(() => null)])
  return { exitCode, ms: performance.now() - started }
}

describe('stopping', () => {
  test('SIGTERM with a client still sending its body: cut off unanswered after the grace period, and the process exits', async () => {
    const core = await spawnCore(await own.env())
    const slow = await tricklingRequest(core, welcomeKeyOf(core))
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
    const core = await spawnCore(await own.env())
    const slow = await tricklingRequest(core, welcomeKeyOf(core))
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

  // `npm start` stopped by Ctrl-C, or by a supervisor that signals the whole process group (systemd's
  // default KillMode): core gets the signal from the terminal or the supervisor, and again from npm,
  // which forwards what it gets. That is one request to stop, not an operator asking twice.
  test('the same signal twice at once (the process group, and npm forwarding it) stops core as one: requests answered, exit 0', async () => {
    const core = await spawnCore(await own.env())
    const [first, rest] = ['{"sessionId":"s",', '"eventName":"under way"}']
    const head = `POST /api/ingestion/customEvent HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer ${welcomeKeyOf(core)}\r\nContent-Length: ${first.length + rest.length}\r\n\r\n`
    const request = await requestByHand(core.url, head + first)
    try {
      await Bun.sleep(200)
      core.proc.kill('SIGINT')
      // What npm takes to forward it: sent back to back, the system would deliver the two as one.
      await Bun.sleep(10)
      core.proc.kill('SIGINT')
      await Bun.sleep(100)
      request.send(rest)
      const { exitCode } = await timedExit(core)
      expect(core.output()).not.toContain('"msg":"stopping at once"')
      expect(exitCode).toBe(0)
      expect(request.answer()).toStartWith('HTTP/1.1 200')
    } finally {
      request.end()
      core.proc.kill('SIGKILL')
    }
  })
})

describe.skipIf(engine !== 'postgres')('stopping while the database does not answer', () => {
  test('SIGTERM with the database host unresponsive (connections open, nothing answered): the process exits soon', async () => {
    const { database, proxy, url } = await proxiedTestDatabase()
    own.databases.push(database)
    const core = await spawnCore({ DATABASE_URL: url })
    try {
      const sent = await fetch(`${core.url}/api/ingestion/customEvent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${welcomeKeyOf(core)}` },
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

describe('stopping while core starts', () => {
  // A signal's default action would kill core wherever its start is: a first start's initdb cut
  // short leaves a DATA_DIR no later start can open, and a default project made would never have its
  // key shown. The start finishes, then core stops as it does once up.
  test('SIGTERM during the start: the start finishes and shows its key, then core exits 0; the next start serves that key', async () => {
    let output = ''
    let env: Record<string, string>
    let startIsUnderWay: () => boolean
    let other: postgres.Sql | undefined
    if (engine === 'postgres') {
      env = await own.env()
      // What another core holds while it migrates: this one waits for it, and says so.
      other = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} })
      await other`select pg_advisory_lock(${MIGRATION_LOCK})`
      startIsUnderWay = () => output.includes('waiting for another core process')
    } else {
      // An empty DATA_DIR: the start runs initdb, which takes seconds, in DATA_DIR/pglite.
      const dir = mkdtempSync(join(tmpdir(), 'sightline-stop-start-'))
      own.dataDirs.push(dir)
      env = { DATA_DIR: dir }
      startIsUnderWay = () => existsSync(join(dir, 'pglite'))
    }
    const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const printed = Promise.all([proc.stdout, proc.stderr].map(async (stream) => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk)
    }))
    try {
      while (!startIsUnderWay() && proc.exitCode === null) await Bun.sleep(5)
      proc.kill('SIGTERM')
      await Bun.sleep(200)
      if (other) await other`select pg_advisory_unlock(${MIGRATION_LOCK})`
      const exitCode = await Promise.race([proc.exited, Bun.sleep(25_000).then(() => 'still running')])
      await printed
      expect(exitCode, output).toBe(0)
      const key = output.match(/shown this once: +(sl_dev_\S+)/)?.[1]
      expect(key, output).toBeDefined()
      expect(output).toContain('"msg":"shutting down","signal":"SIGTERM"')
      const again = await spawnCore(env)
      try {
        expect(again.output()).not.toContain('shown this once')
        const sent = await fetch(`${again.url}/api/ingestion/customEvent`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: JSON.stringify({ sessionId: 'after-stop', eventName: 'hello' }),
        })
        expect(sent.status).toBe(200)
      } finally {
        await again.stop()
      }
    } finally {
      proc.kill('SIGKILL')
      await other?.end()
    }
  }, 60_000)
})
