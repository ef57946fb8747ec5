import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { runAdmin } from '../helpers/process'

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
    const unknownCommand = await runAdmin(['project', 'explode'], env)
    expect(unknownCommand.exitCode).toBe(2)
    expect(unknownCommand.stderr).toContain('unknown command')
  })
})
