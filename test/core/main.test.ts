import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestDatabase, engine, type TestDatabase } from '../helpers/database'
import { spawnCore } from '../helpers/process'

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
