import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { createTestDatabase, engine, migratedSnapshot, type TestDatabase } from './database'
import type { CoreProcess } from './process'

export interface OwnDatabase {
  /** The environment of a core that uses it. */
  env: Record<string, string>
  /** On Postgres. */
  database?: TestDatabase
  /** Embedded: its data directory. */
  dataDir?: string
}

/**
 * Databases of their own, of the engine under test, for cores started as processes: a Postgres
 * database, or an embedded data directory made from the migrated snapshot (a first start's initdb and
 * migrations take seconds). `close` removes every one made, and any a test adds to `databases` or
 * `dataDirs` itself.
 */
export function ownDatabases(prefix: string) {
  const dataDirs: string[] = []
  const databases: TestDatabase[] = []
  async function create(): Promise<OwnDatabase> {
    if (engine === 'postgres') {
      const database = await createTestDatabase()
      databases.push(database)
      return { env: { DATABASE_URL: database.url! }, database }
    }
    const dataDir = mkdtempSync(join(tmpdir(), prefix))
    dataDirs.push(dataDir)
    await (await PGlite.create(join(dataDir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    return { env: { DATA_DIR: dataDir }, dataDir }
  }
  return {
    dataDirs,
    databases,
    create,
    env: async () => (await create()).env,
    async close() {
      for (const database of databases) await database.close()
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The development key a first start prints once. */
export const welcomeKeyOf = (core: CoreProcess) => core.output().match(/shown this once: +(sl_dev_\S+)/)![1]
