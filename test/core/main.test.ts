import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { createTestDatabase, databaseUrlFor, engine, migratedSnapshot, TEST_DATABASE_URL, type TestDatabase } from '../helpers/database'
import { ROOT, spawnCore } from '../helpers/process'

// What a new user does: start the service on an empty database and send data with the printed key.
const dataDir = mkdtempSync(join(tmpdir(), 'sightline-main-'))
let database: TestDatabase | undefined
afterAll(async () => {
  await database?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const send = (url: string, key: string) =>
  fetch(`${url}/api/ingestion/customEvent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ sessionId: 'first-session', eventName: 'hello' }),
  })

describe('first start', () => {
  test('creates the default project, prints its key once, serves /health and accepts the key', async () => {
    if (engine === 'postgres') database = await createTestDatabase()
    const env: Record<string, string> = database ? { DATABASE_URL: database.url! } : { DATA_DIR: dataDir }

    const first = await spawnCore(env)
    let key: string
    try {
      key = first.output().match(/development key, shown this once: +(sl_dev_\S+)/)?.[1] ?? ''
      expect(key).toMatch(/^sl_dev_/)
      expect((await fetch(`${first.url}/health`)).status).toBe(200)
      expect((await send(first.url, key)).status).toBe(200)
      // Besides the welcome, stdout is the log: one JSON object per line, never with the key.
      // A request's line is written after its answer and comes through a pipe: wait for both.
      const requestLines = () => first.stdout().split('\n').slice(0, -1).filter((line) => line.includes('"msg":"request"')).length
      for (let waited = 0; requestLines() < 2 && waited < 5_000; waited += 20) await Bun.sleep(20)
      await Bun.sleep(50) // and a moment more, in which no other line should come
      const welcome = first.stdout().slice(0, first.stdout().indexOf('\n{'))
      const logLines = first.stdout().slice(welcome.length).trim().split('\n')
      expect(logLines.map((line) => Object.keys(JSON.parse(line)).slice(0, 3))).toEqual(logLines.map(() => ['time', 'level', 'msg']))
      expect(logLines.map((line) => JSON.parse(line).msg)).toEqual(['created the default project', 'listening', 'request', 'request'])
      // Where the data is, whatever directory core was started from.
      expect(JSON.parse(logLines[1]).dataDir).toBe(engine === 'embedded' ? dataDir : undefined)
      expect(welcome).toContain(key)
      // The production key is never shown: the welcome says how to get one.
      expect(welcome).toMatch(/A production key: +npm run -s admin -- key rotate --project [0-9a-f-]{36} --env production\n/)
      expect(logLines.join('\n')).not.toContain(key.slice(0, 16))
      expect(first.stdout().length).toBe(first.output().length) // stderr stays empty
      if (engine === 'embedded') {
        const second = await spawnCore(env).catch((error: Error) => error)
        expect(second).toBeInstanceOf(Error)
        expect(String(second)).toContain('in use by process')
      }
    } finally {
      await first.stop()
    }

    const again = await spawnCore(env)
    try {
      expect(again.output()).not.toContain('shown this once')
      expect((await send(again.url, key)).status).toBe(200)
    } finally {
      await again.stop()
    }
  })
})

/** Starts core as an operator would and waits for it to give up. */
async function failedStart(env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { stdout, stderr, exitCode }
}

describe('a start with a setting that cannot work', () => {
  const secret = 'hunter2-not-for-logs'
  const scratch = mkdtempSync(join(tmpdir(), 'sightline-bad-start-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))
  const aFile = join(scratch, 'a-file')
  writeFileSync(aFile, 'not a database')
  const fresh = (name: string) => join(scratch, name)
  // Where DATABASE_URL points, something takes the connection and never answers: silent, or closing
  // it once the driver spoke (a proxy, or a container's published port, before Postgres is up).
  const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const closing = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: (socket) => void socket.end() } })
  afterAll(() => [silent, closing].forEach((server) => server.stop(true)))

  const cases: [variable: string, env: Record<string, string>][] = [
    ['PORT', { PORT: '1.5' }],
    ['PORT', { PORT: 'abc' }],
    ['MAX_BODY_BYTES', { MAX_BODY_BYTES: '1e999' }],
    ['MAX_UPLOAD_BODY_BYTES', { MAX_UPLOAD_BODY_BYTES: '5e6' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['INTERNAL_SECRET', { INTERNAL_SECRET: secret.slice(0, 10) }],
    ['TRUSTED_PROXIES', { TRUSTED_PROXIES: '10.0.0.0/8 192.0.2.1' }],
    ['TRUSTED_PROXIES', { TRUSTED_PROXIES: '2001:db8::/129' }],
    ['GEOIP_DB', { GEOIP_DB: join(scratch, 'missing.mmdb') }],
    ['GEOIP_DB', { GEOIP_DB: aFile }],
    ['GEOIP_DB', { GEOIP_DB: scratch }],
    ['GEOIP_DB', { GEOIP_DB: ' , ' }],
    ['DATA_DIR', { DATA_DIR: join(aFile, 'data') }],
    // A folder this process may not write in, even as root.
    ...(existsSync('/sys/kernel') ? [['DATA_DIR', { DATA_DIR: '/sys' }] as [string, Record<string, string>]] : []),
    ['DATABASE_URL', { DATABASE_URL: `mysql://sightline:${secret}@127.0.0.1/db` }],
    ['DATABASE_URL', { DATABASE_URL: `postgres://sightline:${secret}@127.0.0.1:1/db` }],
    ['DATABASE_URL', { DATABASE_URL: `postgres://sightline:${secret}@127.0.0.1:${silent.port}/db` }],
    ['DATABASE_URL', { DATABASE_URL: `postgres://sightline:${secret}@127.0.0.1:${closing.port}/db` }],
  ]
  if (TEST_DATABASE_URL) {
    // A server that answers, and refuses: no such database (or role, or a wrong password).
    const url = new URL(databaseUrlFor(TEST_DATABASE_URL, 'sl_no_such_database'))
    url.password = secret
    cases.push(['DATABASE_URL', { DATABASE_URL: url.toString() }])
  }

  test('exits 1 with one line on stderr that names the variable: no stack trace, no secret, nothing created', async () => {
    const results = await Promise.all(cases.map(([, env], i) => failedStart({ DATA_DIR: fresh(`data-${i}`), ...env })))
    results.forEach(({ stdout, stderr, exitCode }, i) => {
      const [variable, env] = cases[i]
      const context = `${JSON.stringify(env)} -> ${stderr}`
      expect(exitCode, context).toBe(1)
      expect(stderr.trimEnd().split('\n'), context).toHaveLength(1)
      expect(stderr, context).toStartWith(`sightline: `)
      expect(stderr, context).toContain(variable)
      expect(stderr + stdout, context).not.toContain(secret.slice(0, 10))
      expect(stderr + stdout, context).not.toContain('shown this once')
      expect(stderr, context).not.toContain('ENOENT')
    })
    // A setting found wrong after the database was set up would have made a default project whose key
    // is never shown: every setting is checked first.
    expect(readdirSync(scratch).filter((name) => name.startsWith('data-') && existsSync(join(scratch, name, 'pglite')))).toEqual([])
  })

  test.skipIf(engine !== 'postgres')("a database that holds another application's tables: one line with the reason, nothing changed", async () => {
    const name = `sl_test_foreign_${process.pid}`
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name}`)
    const url = new URL(databaseUrlFor(TEST_DATABASE_URL!, name))
    const foreign = postgres(url.toString(), { max: 1, onnotice: () => {} })
    try {
      await foreign`create table events (id serial primary key, what text)`
      url.password = secret
      const { stderr, exitCode } = await failedStart({ DATABASE_URL: url.toString() })
      expect(exitCode).toBe(1)
      expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^sightline: DATABASE_URL: cannot migrate postgres:\/\/.*\*\*\*@.*: relation "events" already exists$/)])
      // The migration ran in one transaction: not a table of ours was left behind.
      expect((await foreign`select table_name from information_schema.tables where table_schema = 'public'`).map((t) => t.table_name)).toEqual(['events'])
    } finally {
      await foreign.end()
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  })

  test('a port already taken: the new default project\'s key is still shown before the error', async () => {
    const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const dir = fresh('port-taken')
    mkdirSync(dir)
    await (await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    try {
      const { stdout, stderr, exitCode } = await failedStart({ DATA_DIR: dir, PORT: String(taken.port) })
      expect(exitCode).toBe(1)
      expect(stdout).toMatch(/development key, shown this once: +sl_dev_/)
      expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^sightline: cannot listen on 127.0.0.1:${taken.port} \\(HOST, PORT\\)`))])
    } finally {
      taken.stop(true)
    }
  })

  // Bun shares a port between processes that both ask to (SO_REUSEPORT), and Elysia asks by default:
  // a second core started on a running one's port would take half its traffic into another database.
  test('a port a running core listens on: the second core refuses to start', async () => {
    const databases = ['first', 'second'].map((name) => fresh(`port-shared-${name}`))
    for (const dir of databases) {
      mkdirSync(dir)
      await (await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    }
    const running = await spawnCore({ DATA_DIR: databases[0] })
    try {
      const port = new URL(running.url).port
      const { stderr, exitCode } = await failedStart({ DATA_DIR: databases[1], PORT: port })
      expect(exitCode).toBe(1)
      expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^sightline: cannot listen on 127.0.0.1:${port} \\(HOST, PORT\\)`))])
      expect((await fetch(`${running.url}/health/simple`)).status).toBe(200)
    } finally {
      await running.stop()
    }
  }, 30_000)
})

describe('a database a newer core migrated (a deploy rolled back)', () => {
  test('core starts and serves, and says the database has migrations it does not know', async () => {
    const newer = `insert into drizzle.__drizzle_migrations (hash, created_at) values ('from-a-newer-release', ${Date.now() + 365 * 86_400_000})`
    const dir = mkdtempSync(join(tmpdir(), 'sightline-newer-'))
    let env: Record<string, string>
    let own: TestDatabase | undefined
    if (engine === 'postgres') {
      own = await createTestDatabase()
      await own.db.rows(sql.raw(newer))
      env = { DATABASE_URL: own.url! }
    } else {
      const pg = await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })
      await pg.exec(newer)
      await pg.close()
      env = { DATA_DIR: dir }
    }
    try {
      const core = await spawnCore(env)
      try {
        expect((await fetch(`${core.url}/health`)).status).toBe(200)
        const warning = core.stdout().split('\n').find((line) => line.includes('migrated by a newer core'))
        expect(JSON.parse(warning ?? '{}')).toMatchObject({ level: 'warn', unknownMigrations: 1 })
      } finally {
        await core.stop()
      }
    } finally {
      await own?.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)
})

describe.skipIf(!existsSync('/proc/net/if_inet6'))('HOST as an IPv6 address', () => {
  test('the listening line is a URL that reaches core', async () => {
    if (engine === 'postgres') database ??= await createTestDatabase()
    const dir = mkdtempSync(join(tmpdir(), 'sightline-ipv6-'))
    await (await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    try {
      const core = await spawnCore({ HOST: '::1', ...(database ? { DATABASE_URL: database.url! } : { DATA_DIR: dir }) })
      try {
        expect(core.url).toMatch(/^http:\/\/\[::1\]:\d+$/)
        expect((await fetch(`${core.url}/health/simple`)).status).toBe(200)
      } finally {
        await core.stop()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('when whatever reads the log goes away', () => {
  test('core keeps serving and stops as asked: the log is lost, not the process', async () => {
    const own = engine === 'postgres' ? await createTestDatabase() : undefined
    const dir = mkdtempSync(join(tmpdir(), 'sightline-log-gone-'))
    await (await PGlite.create(join(dir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...(own ? { DATABASE_URL: own.url! } : { DATA_DIR: dir }) },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const reader = proc.stdout.getReader()
      let printed = ''
      while (!printed.includes('"msg":"listening"')) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`core did not start: ${printed}${await new Response(proc.stderr).text()}`)
        printed += new TextDecoder().decode(value)
      }
      const url = printed.match(/"url":"(http:[^"]+)"/)![1]
      const key = printed.match(/shown this once: +(sl_dev_\S+)/)![1]
      // The reader is gone: stdout is a pipe no one reads, and the next log line is written into it.
      await reader.cancel()
      for (let i = 0; i < 5; i++) expect((await send(url, key)).status).toBe(200)
      await Bun.sleep(100)
      expect(proc.exitCode).toBeNull()
      expect((await fetch(`${url}/health`)).status).toBe(200)
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
    } finally {
      proc.kill('SIGKILL')
      await own?.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('a rejection nobody awaits', () => {
  // Bun ends a process on one (exit 1), and the database driver can leave one behind when a connection
  // is cut: core logs it and goes on serving. Run as core's process runs it, in a process of its own.
  test('is logged as an error, and the process goes on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-rejection-'))
    const script = join(dir, 'rejection.ts')
    writeFileSync(
      script,
      `import { createLogger } from ${JSON.stringify(join(ROOT, 'core/src/log.ts'))}
import { logUnhandledRejections } from ${JSON.stringify(join(ROOT, 'core/src/unhandled.ts'))}
logUnhandledRejections(createLogger('info'))
Promise.reject(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'))
setTimeout(() => console.log('still serving'), 100)
`,
    )
    const proc = Bun.spawn([process.execPath, script], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    const [exitCode, stdout] = await Promise.all([proc.exited, new Response(proc.stdout).text()])
    rmSync(dir, { recursive: true, force: true })
    expect(exitCode).toBe(0)
    const [logged, last] = stdout.trim().split('\n')
    expect(JSON.parse(logged)).toMatchObject({ level: 'error', msg: 'unhandled rejection', error: 'write CONNECTION_CLOSED 127.0.0.1:5432' })
    expect(last).toBe('still serving')
  })
})

describe('an exception nobody catches', () => {
  // Core's state is then unknown: it ends, as Bun would, but says why in its log first, a JSON line
  // like its others, and exits 1 for its supervisor. Run as core's process runs it.
  test('is logged as an error line of the log, and the process exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-exception-'))
    const script = join(dir, 'exception.ts')
    writeFileSync(
      script,
      `import { createLogger } from ${JSON.stringify(join(ROOT, 'core/src/log.ts'))}
import { exitOnUncaughtExceptions } from ${JSON.stringify(join(ROOT, 'core/src/unhandled.ts'))}
exitOnUncaughtExceptions(createLogger('info'))
setTimeout(() => { throw new TypeError('cannot read properties of undefined') }, 10)
setTimeout(() => console.log('still serving'), 200)
`,
    )
    const proc = Bun.spawn([process.execPath, script], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    const [exitCode, stdout] = await Promise.all([proc.exited, new Response(proc.stdout).text()])
    rmSync(dir, { recursive: true, force: true })
    expect(exitCode).toBe(1)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0])).toMatchObject({
      level: 'error',
      msg: 'uncaught exception; exiting',
      type: 'TypeError',
      error: 'cannot read properties of undefined',
      stack: expect.stringContaining('exception.ts:4'),
    })
  })
})
