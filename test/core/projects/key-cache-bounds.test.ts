import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { createLogger } from '@sightline/core/log'
import { createKeyCache } from '@sightline/core/projects/key-cache'
import { createProject } from '@sightline/core/projects/service'
import { createTestDatabase, type TestDatabase } from '../../helpers/database'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(() => database.close())

const madeUp = () => `sl_live_${randomBytes(24).toString('base64url')}`

test('a flood of made-up keys pushes no live key out of the cache: it is answered from memory, not looked up again', async () => {
  const cache = createKeyCache(database.db, createLogger('error'), { maxEntries: 4 })
  const project = await createProject(database.db.orm, { name: 'flooded' })
  const key = project.keys.production
  expect(await cache.resolve(key)).not.toBeNull()
  // Revoked behind the cache's back (no notification): from here on, only a lookup would refuse the key,
  // so an answer that still takes it came from memory.
  await database.db.rows(sql`update api_keys set revoked_at = now() where project_id = ${project.projectId}`)
  for (let i = 0; i < 20; i++) expect(await cache.resolve(madeUp())).toBeNull()
  expect(await cache.resolve(key)).not.toBeNull()
})

test('the made-up keys are still remembered, up to the bound, and a key found unknown is no longer taken', async () => {
  let clock = 0
  const cache = createKeyCache(database.db, createLogger('error'), { maxEntries: 4, ttlMs: 1_000, now: () => clock })
  const project = await createProject(database.db.orm, { name: 'revoked-later' })
  const key = project.keys.production
  expect(await cache.resolve(key)).not.toBeNull()
  await database.db.rows(sql`update api_keys set revoked_at = now() where project_id = ${project.projectId}`)
  clock += 1_001 // past the known key's time: looked up again, and found revoked
  expect(await cache.resolve(key)).toBeNull()
  // Remembered as unknown, not as the known entry it was: a key made live again is not seen before
  // the unknown entry's time is out (negative TTL), and then it is.
  await database.db.rows(sql`update api_keys set revoked_at = null where project_id = ${project.projectId}`)
  expect(await cache.resolve(key)).toBeNull()
  clock += 5_001
  expect(await cache.resolve(key)).not.toBeNull()
})
