import type { Database } from './db'
import { startPresenceSweep, type PresenceSweepOptions } from './ingest/presence/sweep'
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
  /** How often quiet presence is swept (see presence/sweep.ts): the default but in tests. */
  presenceSweep?: PresenceSweepOptions
}

/**
 * How long a stop waits for a presence sweep under way. A sweep has no deadline of its own and waits
 * as long as a lock on its tables is held elsewhere (a newer core migrating them, an operator's ALTER
 * TABLE): awaited, it held the stop until its deadline. It commits nothing anyone waits for, and the
 * next sweep, of whichever process, does its work: one still running is rolled back as the database
 * closes.
 */
const SWEEP_STOP_WAIT_MS = 1_000

export async function startServices(db: Database, log: Logger, options: ServicesOptions = {}): Promise<Services> {
  const keys = createKeyCache(db, log)
  await keys.start()
  const quota = createQuota()
  const writer = createWriter(db, log, { ...options.writer, gate: quota.gate })
  // A Postgres server checkpoints and vacuums by itself; the embedded database has nothing else to.
  const upkeep = db.kind === 'embedded' ? startEmbeddedUpkeep(db, log, options.upkeep) : undefined
  // On both: what no server process does for us, and needed by projects that get no presence commit.
  const presenceSweep = startPresenceSweep(db, log, options.presenceSweep)
  return {
    keys,
    quota,
    writer,
    async stop() {
      // Before the writer closes, and with it (in main.ts) the database: a sweep under way is awaited,
      // for a while (see SWEEP_STOP_WAIT_MS).
      await Promise.all([Promise.race([presenceSweep.stop(), Bun.sleep(SWEEP_STOP_WAIT_MS)]), upkeep?.stop()])
      await writer.close()
      await keys.stop()
    },
  }
}
