import type { Database } from './db'
import { createQuota, type Quota } from './ingest/quota'
import type { Logger } from './log'
import { createKeyCache, type KeyCache } from './projects/key-cache'
import { createWriter, type Writer, type WriterOptions } from './writer'

/** The long-lived parts behind the routes, shared by `main.ts` and the tests. */
export interface Services {
  keys: KeyCache
  quota: Quota
  writer: Writer
  /** Commits what is queued and stops listening. */
  stop(): Promise<void>
}

export async function startServices(db: Database, log: Logger, writerOptions: Omit<WriterOptions, 'gate'> = {}): Promise<Services> {
  const keys = createKeyCache(db, log)
  await keys.start()
  const quota = createQuota()
  const writer = createWriter(db, log, { ...writerOptions, gate: quota.gate })
  return {
    keys,
    quota,
    writer,
    async stop() {
      await writer.close()
      await keys.stop()
    },
  }
}
