import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { runAdmin, spawnCore } from '../helpers/process'

// The admin command line as a script would use it, on the database it is pointed at.
let database: TestDatabase | undefined
let env: Record<string, string>
let dataDir: string | undefined

beforeAll(async () => {
  if (engine === 'postgres') {
    database = await createTestDatabase()
    env = { DATABASE_URL: database.url! }
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'sightline-cli-'))
    env = { DATA_DIR: dataDir }
  }
})
afterAll(async () => {
  await database?.close()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

const admin = async (...args: string[]) => {
  const result = await runAdmin([...args, '--json'], env)
  return { ...result, json: result.stdout ? JSON.parse(result.stdout) : undefined }
}

describe('admin command line', () => {
  let projectId: string

  test('project create prints the id and a key per environment', async () => {
    const { exitCode, json } = await admin('project', 'create', '--name', 'shop', '--monthly-limit', '1000')
    expect(exitCode).toBe(0)
    expect(json).toEqual({
      projectId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'shop',
      monthlyLimit: 1000,
      keys: { production: expect.stringMatching(/^sl_live_/), development: expect.stringMatching(/^sl_dev_/) },
    })
    projectId = json.projectId
  })

  test('project list and set-limit', async () => {
    expect((await admin('project', 'set-limit', '--project', projectId, '--monthly-limit', 'unlimited')).json).toEqual({ projectId, monthlyLimit: null })
    const { json } = await admin('project', 'list')
    expect(json).toContainEqual(expect.objectContaining({ projectId, name: 'shop', monthlyLimit: null, environments: ['development', 'production'] }))
  })

  test('key create, rotate, revoke and list', async () => {
    const created = (await admin('key', 'create', '--project', projectId, '--env', 'staging')).json
    expect(created).toMatchObject({ projectId, environment: 'staging', key: expect.stringMatching(/^sl_env_/) })
    const rotated = (await admin('key', 'rotate', '--project', projectId, '--env', 'staging')).json
    const rotatedKey: string = rotated.key
    expect(rotatedKey).toMatch(/^sl_env_/)
    expect(rotated.revoked).toEqual([created.keyPrefix])
    const production = (await admin('key', 'rotate', '--project', projectId, '--env', 'production')).json
    expect((await admin('key', 'revoke', '--project', projectId, '--key-prefix', production.keyPrefix)).json).toEqual({ projectId, revoked: [production.keyPrefix] })
    const keys = (await admin('key', 'list', '--project', projectId)).json
    expect(keys).toHaveLength(5)
    expect(keys.filter((k: { active: boolean }) => k.active).map((k: { environment: string }) => k.environment).sort()).toEqual(['development', 'staging'])
    expect(JSON.stringify(keys)).not.toContain(rotatedKey)
  })

  test('errors print a clear message and exit non-zero', async () => {
    const unknownProject = await admin('key', 'list', '--project', '00000000-0000-0000-0000-000000000000')
    expect(unknownProject.exitCode).toBe(1)
    expect(JSON.parse(unknownProject.stderr)).toEqual({ error: { code: 'not_found', message: expect.stringContaining('no project') } })
    // A mistyped environment is not rotated into being: the keys of the real one would stay valid.
    const keysBefore = (await admin('key', 'list', '--project', projectId)).json
    const mistyped = await admin('key', 'rotate', '--project', projectId, '--env', 'produciton')
    expect(mistyped.exitCode).toBe(1)
    expect(JSON.parse(mistyped.stderr)).toEqual({ error: { code: 'not_found', message: expect.stringContaining('no environment "produciton"') } })
    expect((await admin('key', 'list', '--project', projectId)).json).toEqual(keysBefore)
    // A prefix that begins several keys revokes none of them.
    await admin('key', 'create', '--project', projectId, '--env', 'staging')
    const ambiguous = await admin('key', 'revoke', '--project', projectId, '--key-prefix', 'sl_env_')
    expect(ambiguous.exitCode).toBe(1)
    expect(JSON.parse(ambiguous.stderr)).toEqual({ error: { code: 'validation_failed', message: expect.stringContaining('begins 2 active keys') } })
    const staging = (await admin('key', 'list', '--project', projectId)).json.filter((k: { environment: string; active: boolean }) => k.environment === 'staging' && k.active)
    expect(staging).toHaveLength(2)
    const badFlag = await admin('key', 'list', '--frobnicate', 'x')
    expect(badFlag.exitCode).toBe(2)
    expect(badFlag.stderr).toContain('frobnicate')
    const badLimit = await admin('project', 'create', '--name', 'x', '--monthly-limit', 'lots')
    expect(badLimit.exitCode).toBe(2)
    // Digits, but past what is counted exactly: said in the command's words, not the service's "null".
    const hugeLimit = await admin('project', 'create', '--name', 'x', '--monthly-limit', '9007199254740993')
    expect(hugeLimit.exitCode).toBe(1)
    expect(JSON.parse(hugeLimit.stderr).error.message).toBe('the monthly limit is a whole number of events up to 9007199254740991, or none (unlimited)')
    // A flag of another command is refused, not ignored: this rotation would have replaced every production key.
    const keysNow = (await admin('key', 'list', '--project', projectId)).json
    const stray = await runAdmin(['key', 'rotate', '--project', projectId, '--env', 'production', '--key-prefix', 'sl_live_abcdef'], env)
    expect(stray.exitCode).toBe(2)
    expect(stray.stderr).toStartWith('error: "key rotate" takes no --key-prefix\n')
    expect((await admin('key', 'list', '--project', projectId)).json).toEqual(keysNow)
    const help = await runAdmin(['key', 'revoke', '--help'], env)
    expect(help).toEqual({ exitCode: 0, stdout: 'usage: npm run -s admin -- key revoke --project ID --key-prefix PREFIX [--json]\n', stderr: '' })
    const unknownCommand = await runAdmin(['project', 'explode'], env)
    expect(unknownCommand.exitCode).toBe(2)
    expect(unknownCommand.stderr).toContain('unknown command')
  })

  test('key revoke takes the whole key, as it was found leaked: that key alone, of that project alone', async () => {
    const leaked = (await admin('key', 'create', '--project', projectId, '--env', 'edge')).json
    const sibling = (await admin('key', 'create', '--project', projectId, '--env', 'edge')).json
    const other = (await admin('project', 'create', '--name', 'other')).json
    const elsewhere = await admin('key', 'revoke', '--project', other.projectId, '--key-prefix', leaked.key)
    expect(elsewhere.exitCode).toBe(1)
    // Named by its prefix only, as everywhere else: the key is not printed again.
    expect(JSON.parse(elsewhere.stderr)).toEqual({ error: { code: 'not_found', message: `no active key starting with ${leaked.keyPrefix} in project ${other.projectId}` } })
    expect((await admin('key', 'revoke', '--project', projectId, '--key-prefix', leaked.key)).json).toEqual({ projectId, revoked: [leaked.keyPrefix] })
    const edge = (await admin('key', 'list', '--project', projectId)).json.filter((k: { environment: string }) => k.environment === 'edge')
    expect(edge.map((k: { keyPrefix: string; active: boolean }) => [k.keyPrefix, k.active])).toEqual([[leaked.keyPrefix, false], [sibling.keyPrefix, true]])
    // Longer than a prefix and not a key: it cannot name one, and says so.
    const tooLong = await admin('key', 'revoke', '--project', projectId, '--key-prefix', sibling.key.slice(0, 20))
    expect(tooLong.exitCode).toBe(1)
    expect(JSON.parse(tooLong.stderr)).toEqual({ error: { code: 'validation_failed', message: expect.stringContaining('at most 16 characters') } })
  })
})

describe('admin command line: keys in what it prints', () => {
  test('a whole key given where it does not belong is not printed back: errors name it by its prefix', async () => {
    const { projectId, keys } = (await admin('project', 'create', '--name', 'pasted')).json
    const key: string = keys.production
    // The key pasted as the project, and as a positional after forgetting --key-prefix.
    const asProject = await runAdmin(['key', 'list', '--project', key], env)
    const positional = await runAdmin(['key', 'revoke', '--project', projectId, key], env)
    const asJson = await runAdmin(['key', 'revoke', '--project', key, '--key-prefix', key.slice(0, 16), '--json'], env)
    expect([asProject.exitCode, positional.exitCode, asJson.exitCode]).toEqual([1, 2, 1])
    for (const { stdout, stderr } of [asProject, positional, asJson]) {
      expect(stdout).toBe('')
      expect(stderr).not.toContain(key)
      expect(stderr).toContain(`${key.slice(0, 16)}…`)
    }
  })
})

describe('admin command line beside a serving core', () => {
  const send = (url: string, key: string) =>
    fetch(`${url}/api/ingestion/customEvent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ sessionId: 'cli-live', eventName: 'x' }),
    }).then((res) => res.status)

  /** The statuses a key gets until `expected` (or 1 s): what the serving core does after a command. */
  async function statusWithin(url: string, key: string, expected: number): Promise<{ status: number; ms: number }> {
    const started = performance.now()
    let status = await send(url, key)
    while (status !== expected && performance.now() - started < 1_000) status = await send(url, key)
    return { status, ms: performance.now() - started }
  }

  test.skipIf(engine !== 'postgres')('revoke, rotate and set-limit take effect at once in the running core; only creation prints a key', async () => {
    const { projectId, keys } = (await admin('project', 'create', '--name', 'live')).json
    const core = await spawnCore(env)
    try {
      expect(core.output()).not.toContain('shown this once') // the database had projects already
      const created = (await admin('key', 'create', '--project', projectId, '--env', 'development')).json
      expect(await send(core.url, created.key)).toBe(200) // cached by the core now

      expect((await runAdmin(['key', 'revoke', '--project', projectId, '--key-prefix', created.keyPrefix], env)).exitCode).toBe(0)
      const revoked = await statusWithin(core.url, created.key, 401)
      expect(revoked.status).toBe(401)
      expect(revoked.ms).toBeLessThan(100)

      expect(await send(core.url, keys.production)).toBe(200)
      const rotation = await runAdmin(['key', 'rotate', '--project', projectId, '--env', 'production'], env)
      expect(rotation.exitCode).toBe(0)
      const rotated = await statusWithin(core.url, keys.production, 401)
      expect(rotated.status).toBe(401)
      expect(rotated.ms).toBeLessThan(100)
      const newKey = rotation.stdout.match(/shown this once: (sl_live_\S+)/)![1]
      expect(await send(core.url, newKey)).toBe(200)

      expect((await runAdmin(['project', 'set-limit', '--project', projectId, '--monthly-limit', '0'], env)).exitCode).toBe(0)
      expect((await statusWithin(core.url, newKey, 429)).status).toBe(429)
      expect((await runAdmin(['project', 'set-limit', '--project', projectId, '--monthly-limit', 'unlimited'], env)).exitCode).toBe(0)
      expect((await statusWithin(core.url, newKey, 200)).status).toBe(200)

      // Everything but creation shows prefixes only.
      const listed = [await runAdmin(['key', 'list', '--project', projectId], env), await runAdmin(['project', 'list'], env)]
      for (const { stdout } of listed) {
        expect(stdout).not.toMatch(/sl_[a-z]+_[A-Za-z0-9_-]{32}/)
        expect(stdout).not.toContain(newKey)
      }
    } finally {
      await core.stop()
    }
  })

  test.skipIf(engine !== 'embedded')('the embedded database a core holds: a clear refusal, nothing changed', async () => {
    const core = await spawnCore(env)
    try {
      const { exitCode, stdout, stderr } = await runAdmin(['project', 'create', '--name', 'while-serving'], env)
      expect(exitCode).toBe(1)
      expect(stdout).toBe('')
      expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^error: the embedded database in .* is in use by process \d+/)])
    } finally {
      await core.stop()
    }
    expect((await admin('project', 'list')).json.map((p: { name: string }) => p.name)).not.toContain('while-serving')
  })

  test.skipIf(engine !== 'postgres')('a statement the database refuses: one line with its reason, not the query Drizzle failed', async () => {
    const own = await createTestDatabase()
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    try {
      await own.db.rows(sql`do $$ begin execute format('alter database %I set lock_timeout = %L', current_database(), '200ms'); end $$`)
      const holder = own.db.transaction(async (tx) => {
        await tx.execute(sql`lock table projects in access exclusive mode`)
        locked()
        await held
      })
      await isLocked
      const text = await runAdmin(['project', 'list'], { DATABASE_URL: own.url! })
      const json = await runAdmin(['project', 'create', '--name', 'shop', '--json'], { DATABASE_URL: own.url! })
      release()
      await holder
      expect(text.exitCode).toBe(1)
      expect(text.stderr.trimEnd().split('\n')).toEqual(['error: canceling statement due to lock timeout'])
      expect(json.exitCode).toBe(1)
      expect(json.stderr.trimEnd().split('\n')).toEqual([JSON.stringify({ error: { code: 'error', message: 'canceling statement due to lock timeout' } })])
    } finally {
      release()
      await own.close()
    }
  })

  test('a database that cannot be reached: one line naming DATABASE_URL, without its password', async () => {
    const { exitCode, stdout, stderr } = await runAdmin(['project', 'list'], { DATABASE_URL: 'postgres://sightline:hunter2-secret@127.0.0.1:1/sightline' })
    expect(exitCode).toBe(1)
    expect(stdout).toBe('')
    expect(stderr.trimEnd().split('\n')).toEqual(['error: DATABASE_URL: cannot connect to postgres://sightline:***@127.0.0.1:1/sightline: connect ECONNREFUSED 127.0.0.1:1'])
  })
})
