import { afterEach, describe, expect, setSystemTime, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createLogger } from '@sightline/core/log'
import { createKeyCache } from '@sightline/core/projects/key-cache'
import { createProject } from '@sightline/core/projects/service'
import { createTestDatabase } from '../../helpers/database'

/*
 * The system clock is set back (NTP stepping a clock that ran fast, a virtual machine resumed from a
 * snapshot): how long a key is trusted is a duration, and must not grow by the hour the clock went
 * back. (How long the listening connection may go unheard: key-cache-listen.test.ts.)
 */

const log = createLogger('error')
const HOUR_MS = 3_600_000

afterEach(() => setSystemTime())

describe('the key cache when the system clock is set back', () => {
  test('a cached key is trusted for its time to live, not for that time plus the hour the clock went back', async () => {
    const database = await createTestDatabase()
    const cache = createKeyCache(database.db, log, { ttlMs: 100 })
    await cache.start()
    try {
      const project = await createProject(database.db.orm, { name: 'clock-ttl' })
      const key = project.keys.production
      expect(await cache.resolve(key)).not.toBeNull()
      setSystemTime(new Date(Date.now() - HOUR_MS))
      // Revoked behind the cache's back (a notification lost): only the time to live stops the key.
      await database.db.rows(sql`update api_keys set revoked_at = now() where project_id = ${project.projectId}`)
      await Bun.sleep(300)
      expect(await cache.resolve(key)).toBeNull()
    } finally {
      await cache.stop()
      await database.close()
    }
  })
})
