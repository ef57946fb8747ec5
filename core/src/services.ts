import type { Database } from './db'
import { createQuota, type Quota } from './ingest/quota'
import type { Logger } from './log'
import { createKeyCache, type KeyCache } from './projects/key-cache'
import { startEmbeddedUpkeep, type UpkeepOptions } from './upkeep'
import { createWriter, type Writer, type WriterOptions } from './writer'

/** The long-lived parts behind the routes, shared by `main.ts` and the tests. */
export interface Services {
  keys: KeyCache
  quota: Quota
  writer: Writer
  /** Commits what is queued and stops listening. */
  stop(): Promise<void>
}

export interface ServicesOptions {
  writer?: Omit<WriterOptions, 'gate'>
  /** How the embedded database is looked after (see upkeep.ts): the defaults but in tests. */
  upkeep?: UpkeepOptions
}

export async function startServices(db: Database, log: Logger, options: ServicesOptions = {}): Promise<Services> {
  const keys = createKeyCache(db, log)
  await keys.start()
  const quota = createQuota()
  const writer = createWriter(db, log, { ...options.writer, gate: quota.gate })
  // A Postgres server checkpoints and vacuums by itself; the embedded database has nothing else to.
  const upkeep = db.kind === 'embedded' ? startEmbeddedUpkeep(db, log, options.upkeep) : undefined
  return {
    keys,
    quota,
    writer,
    async stop() {
      await upkeep?.stop()
      await writer.close()
      await keys.stop()
    },
  }
}
