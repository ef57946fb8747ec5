import { randomBytes } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'
import { embeddedDatabase, postgresDatabase, type Database } from '@sightline/core/db'

/** CI runs the suite twice: on embedded PGlite, and with TEST_DATABASE_URL on a real Postgres server. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL
export const engine: 'postgres' | 'embedded' = TEST_DATABASE_URL ? 'postgres' : 'embedded'

export interface TestDatabase {
  db: Database
  /** Connection string of this test's own Postgres database (postgres engine only). */
  url?: string
  close(): Promise<void>
}

// Migrating a fresh PGlite takes seconds; loading a migrated snapshot takes a fraction of that.
let snapshot: Promise<Blob> | undefined
export function migratedSnapshot(): Promise<Blob> {
  snapshot ??= (async () => {
    const pg = await PGlite.create()
    await embeddedDatabase(pg).migrate()
    const dump = await pg.dumpDataDir('none')
    await pg.close()
    return dump
  })()
  return snapshot
}

export const databaseUrlFor = (url: string, name: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

/** A fresh, migrated database of its own for one test file or test. */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (!TEST_DATABASE_URL) {
    const pg = await PGlite.create({ loadDataDir: await migratedSnapshot() })
    const db = embeddedDatabase(pg)
    return { db, close: () => db.close() }
  }
  const name = `sl_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  const url = databaseUrlFor(TEST_DATABASE_URL, name)
  const db = postgresDatabase(url)
  await db.migrate()
  return {
    db,
    url,
    async close() {
      await db.close()
      const cleanup = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
      await cleanup.unsafe(`drop database if exists ${name} with (force)`)
      await cleanup.end()
    },
  }
}
