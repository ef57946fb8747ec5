import { mkdirSync, readFileSync, statfsSync } from 'node:fs'
import type { Socket } from 'node:net'
import { join, resolve } from 'node:path'
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { sql, type SQLWrapper } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { ConfigError, withoutPassword } from './config'
import { DatabaseInUseError, lockDataDir } from './data-dir-lock'
import { pacedSockets } from './postgres-socket'
import { postgresTarget } from './postgres-url'
import { postgresTransactions } from './postgres-transaction'
import { adoptDrizzleParsers, copyInto, drizzleClient, embeddedStartOptions, preparingClient, StatementCache } from './pglite'
import * as schema from '@sightline/schema'

export type Orm = PgDatabase<PgQueryResultHKT, typeof schema>
export type Unlisten = () => Promise<void>

export interface Database {
  readonly kind: 'postgres' | 'embedded'
  readonly orm: Orm
  /** Raw SQL, rows out, the same on both drivers. */
  rows<T>(query: SQLWrapper, executor?: Orm): Promise<T[]>
  /**
   * A transaction for raw-SQL writers (no relational queries on `tx`), with `copyIn`. On Postgres its
   * BEGIN goes out with its first statements instead of waiting for an answer of its own, which on a
   * busy writer is most of what a short transaction costs; on PGlite its statements are prepared.
   */
  transaction<T>(fn: (tx: Orm, copyIn?: CopyIn) => Promise<T>): Promise<T>
  /**
   * Postgres LISTEN. `onConnect` runs on the first and on every later (re)connection: notifications
   * sent while disconnected are lost, so a listener that caches must drop its cache there.
   */
  listen(channel: string, onMessage: (payload: string) => void, onConnect?: () => void): Promise<Unlisten>
  /**
   * Postgres: closes the connection the listeners are on, which is then made again and listens on
   * every channel again (each `onConnect` runs). For a connection that died silently (a NAT or
   * firewall dropped it, no FIN or RST): it hears nothing, and stays open for as long as TCP keeps it.
   */
  reconnectListening?(): void
  notify(channel: string, payload: string): Promise<void>
  /**
   * Applies the drizzle-kit migrations, then `whileLocked` (boot-time setup such as the default
   * project), holding a lock so that core processes starting together do it once. `onWait` is told
   * when another process holds that lock, so that a start waiting on it says why. Answers how many
   * migrations the database has that this core does not know (see migrationsUnknownHere).
   */
  migrate(whileLocked?: (orm: Orm) => Promise<void>, onWait?: () => void): Promise<number>
  /** Embedded, on disk: whether DATA_DIR has the room to take writes (see EMBEDDED_MIN_FREE_BYTES). */
  hasRoom?(): boolean
  close(): Promise<void>
}

/**
 * Ends a writer transaction with `COPY ... FROM STDIN` (`statement`) and its COMMIT. On Postgres they
 * are sent behind every statement issued before: their answers and the server's call for the rows
 * come back in one round trip, and the rows and the commit go in the next, so a commit takes as many
 * round trips as without the COPY. Nothing else may be sent on the transaction until the COPY settles
 * (`commit` or `cancel`), nor after it committed. On PGlite, see `copyInto`.
 */
export type CopyIn = ((statement: string) => PendingCopy) & {
  /** Rows whose COPY text is longer are better inserted (on PGlite: see copyInto). */
  readonly maxTextLength?: number
}

export interface PendingCopy {
  /**
   * Sends the rows (`text`, in COPY's text format) and commits the transaction with them: on Postgres
   * it resolves once committed; on PGlite once copied, and the transaction commits as its callback
   * returns, which must follow. If the COPY fails, nothing is committed: the transaction is as it was
   * before the COPY (which runs inside a savepoint), still open, and the server's error is thrown.
   */
  commit(text: string): Promise<void>
  /** Gives the COPY up: the transaction is as it was before it, still open. Never throws. */
  cancel(): Promise<void>
}

export { DatabaseInUseError }

export const MIGRATIONS_FOLDER = new URL('../../drizzle/migrations', import.meta.url).pathname

/**
 * The migrations the database has that are newer than every one this core knows: a newer release
 * migrated it, and this one (a deploy rolled back) applies none of them and cannot undo them. Its
 * statements still work on the newer tables (migrations only add to them), so it is told, not refused:
 * a rollback that refused to start would leave no core serving at all.
 */
async function migrationsUnknownHere(orm: Orm): Promise<number> {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as { entries: { when: number }[] }
  const newestKnown = Math.max(...journal.entries.map((entry) => entry.when))
  const [{ unknown }] = rowsOf<{ unknown: number }>(
    await orm.execute(sql`select count(*)::int as unknown from drizzle.__drizzle_migrations where created_at > ${newestKnown}`),
  )
  return unknown
}
/** Arbitrary constant that names the migration lock among Postgres advisory locks. */
export const MIGRATION_LOCK = 7_254_813_001

export const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as T[]

/** How many rows a statement inserted, updated or deleted: PGlite says `affectedRows`, postgres.js `count`. */
export function affectedRowsOf(result: unknown): number {
  const { affectedRows, count } = result as { affectedRows?: number; count?: number }
  const rows = affectedRows ?? count
  if (typeof rows !== 'number') throw new TypeError('the database driver gave no row count')
  return rows
}

export function openDatabase(options: { databaseUrl?: string; dataDir: string }): Promise<Database> {
  return options.databaseUrl ? Promise.resolve(postgresDatabase(options.databaseUrl)) : openEmbeddedDatabase(options.dataDir)
}

export function postgresDatabase(url: string, poolSize = 10, { silentConnectionMs = SILENT_CONNECTION_MS } = {}): Database {
  const transactions = postgresTransactions()
  // One pacing for the pool and the listening connection (see pacedSockets).
  const sockets = pacedSockets({ silentMs: silentConnectionMs })
  const client = connect(url, { max: poolSize, onclose: transactions.connectionClosed, connection: { application_name: 'sightline' } }, sockets)
  // LISTEN goes through a client of its own, which never runs a statement but hands its listeners
  // the one connection postgres.js gives them: so that its socket is known here, to be closed (see
  // reconnectListening). postgres.js makes it again on close, and listens on every channel again.
  let listeningSocket: Socket | undefined
  const listener = connect(url, { max: 1, connection: { application_name: 'sightline' } }, async (target) => (listeningSocket = await sockets(target)))
  const orm = drizzlePostgres(client, { schema }) as unknown as Orm
  return {
    kind: 'postgres',
    orm,
    rows: async (query, executor = orm) => rowsOf(await executor.execute(query)),
    transaction: (fn) => transactions.run(client, fn),
    async listen(channel, onMessage, onConnect) {
      const { unlisten } = await listener.listen(channel, onMessage, onConnect)
      return unlisten
    },
    reconnectListening: () => void listeningSocket?.destroy(),
    notify: async (channel, payload) => void (await client.notify(channel, payload)),
    async migrate(whileLocked, onWait) {
      // One connection, so that the session-level advisory lock covers everything done here.
      const locked = connect(url, { max: 1 }, pacedSockets())
      let reached = false
      try {
        // The first statement of a start: what fails here is the connection string or the server.
        // Bounded: a server that takes the connection and closes it unanswered (a proxy or a published
        // container port in front of a Postgres that is not up) has the driver connect again for as
        // long as the statement waits, its connect_timeout restarting each time (see postgres-socket.ts).
        const [{ free }] = await answerWithin(
          locked<{ free: boolean }[]>`select pg_try_advisory_lock(${MIGRATION_LOCK}) as free`,
          CONNECT_DEADLINE_MS,
          `no answer within ${CONNECT_DEADLINE_MS / 1000} s`,
        ).catch((error) => {
          throw new ConfigError(`DATABASE_URL: cannot connect to ${withoutPassword(url)}: ${errorMessage(error)}`)
        })
        reached = true
        if (!free) {
          onWait?.()
          await locked`select pg_advisory_lock(${MIGRATION_LOCK})`
        }
        const lockedOrm = drizzlePostgres(locked, { schema }) as unknown as Orm
        await migratePostgres(lockedOrm as never, { migrationsFolder: MIGRATIONS_FOLDER }).catch((error) => {
          throw new ConfigError(`DATABASE_URL: cannot migrate ${withoutPassword(url)}: ${errorMessage(error)}`)
        })
        await whileLocked?.(lockedOrm)
        return await migrationsUnknownHere(lockedOrm)
      } finally {
        // One still connecting would be waited for as long as it tries: given up at once instead.
        await locked.end(reached ? undefined : { timeout: 0 })
      }
    },
    close() {
      transactions.close()
      // Called once the writer has drained: nothing of ours is under way. What end() may still wait
      // for is a statement a lost connection failed, which postgres.js keeps as under way until the
      // timeout (porsager/postgres#1130): a stop after any lost connection took that long.
      return Promise.all([client.end({ timeout: 0.5 }), listener.end({ timeout: 0.5 })]).then(() => {})
    },
  }
}

/**
 * How long a request waits for a read (a key lookup, a route's own read) before it is answered 503:
 * as long as the writer waits for a commit.
 */
export const READ_TIMEOUT_MS = 10_000

/**
 * A connection of the pool that has sent and heard nothing back for this long is given up (see
 * silenceWatch in postgres-socket.ts): a partition left it stuck. Chosen from the bounds of what the
 * pool runs: a commit is given up at commitTimeoutMs, a read at READ_TIMEOUT_MS, a reservation at
 * reserveTimeoutMs, a health check sooner (10 s each, by default), so an answer later than that is
 * awaited by nobody; three times as long leaves room for a statement that was slow but not lost. The
 * project admin's transactions are not bounded so, but short: one waiting this long on a lock fails
 * as a lost connection. Migrations, which may wait on another process's lock and run long, use a
 * client of their own, not watched (see `migrate`).
 */
const SILENT_CONNECTION_MS = 30_000

/** How long a start waits for the database's first answer: connecting takes up to connect_timeout (5 s). */
const CONNECT_DEADLINE_MS = 10_000

/**
 * `promise`, or a rejection saying `message` once `ms` have passed without it settling. A database
 * that stopped answering (its host gone, a partition) leaves a driver waiting on its connection for
 * as long as TCP keeps it, which may be for ever; what was asked may still be answered later.
 */
export function answerWithin<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

/**
 * A postgres.js client whose connections are paced by pacedSockets alone. postgres.js (3.4.9) has a
 * reconnection backoff of its own, and it is what made core slow to store again after a server
 * restart: one count for the whole pool of every connection that closed with an error, reset only
 * once a connection completes its startup, from which each connection closing takes a delay of up to
 * 20 s (3^count / 100 s, times 0.5 to 1 at random) that it waits before connecting again, whatever
 * the server does meanwhile. A restart refuses some ten connections a process, enough for delays of
 * 5 to 20 s: writes handed to those connections waited them out after the server was back (up to
 * the writer's 10 s commit timeout), while other connections were already answered. pacedSockets
 * paces the same connections (those closed unanswered), and ends its pauses once one is answered.
 * `sockets` makes its connections (pacedSockets, with silenceWatch or not).
 */
function connect(url: string, options: postgres.Options<{}>, sockets: ReturnType<typeof pacedSockets>) {
  try {
    // `socket` is documented (postgres.js's README, "Custom socket") but missing from its types.
    const socket = { socket: sockets } as postgres.Options<{}>
    const { url: driverUrl, ...server } = postgresTarget(url)
    return postgres(driverUrl, { connect_timeout: 5, backoff: false, onnotice: () => {}, ...socket, ...server, ...options })
  } catch (error) {
    throw new ConfigError(`DATABASE_URL is not a valid connection string (${errorMessage(error)})`)
  }
}

/**
 * What went wrong, on one line. Drizzle's error only repeats the failed query, and its cause says why;
 * drivers throw more than Errors (PGlite's file system throws `{name, errno}` objects).
 */
export function errorMessage(error: unknown): string {
  const cause = (error as { cause?: unknown } | undefined)?.cause
  if (error instanceof Error && error.message.startsWith('Failed query') && cause) return errorMessage(cause)
  const text = error instanceof Error ? error.message : typeof error === 'object' && error ? JSON.stringify(error) : String(error)
  return text.replace(/\s*\n\s*/g, ' ')
}

/** errorMessage cut to a log line: a failed statement's error may carry megabytes of parameters. */
export const errorText = (error: unknown): string => errorMessage(error).slice(0, 300)

/** Embedded PGlite, persisted under `dataDir`; one process at a time may open it. */
export async function openEmbeddedDatabase(dataDir: string): Promise<Database> {
  const unusable = (error: unknown) => new ConfigError(`DATA_DIR: cannot open the embedded database in ${resolve(dataDir)}: ${errorMessage(error)}`)
  let releaseLock: () => void
  try {
    mkdirSync(dataDir, { recursive: true })
    releaseLock = lockDataDir(dataDir)
  } catch (error) {
    throw error instanceof DatabaseInUseError ? error : unusable(error)
  }
  try {
    const pg = await PGlite.create(join(dataDir, 'pglite'), embeddedStartOptions())
    const shortOfRoom = freeSpaceCheck(dataDir)
    // A first start runs initdb in a second PGlite and leaves it as garbage, most of a gigabyte,
    // which the collector only frees once that instance's last callbacks have run.
    await Bun.sleep(0)
    Bun.gc(true)
    return embeddedDatabase(pg, releaseLock, shortOfRoom)
  } catch (error) {
    releaseLock()
    throw unusable(error)
  }
}

/**
 * Free space the embedded database keeps on DATA_DIR's file system. PGlite (0.5.16) does not survive
 * failing to create a write-ahead log segment (16 MB) on a full disk: where Postgres would stop and
 * recover, it spins for ever on the thread that serves requests, and core answers nothing more, not
 * /health/simple, not SIGTERM. So its writers' transactions are refused while less than this is left
 * (storage trouble: 503 storage_unavailable, with Retry-After) and taken again once space is freed.
 * It covers a new segment and a commit of the writer's largest batch (8 MB), logged and stored.
 */
export const EMBEDDED_MIN_FREE_BYTES = 64 * 1024 * 1024

/** Says why while `dir`'s file system has less than `minBytes` free; null while it has room. */
export function freeSpaceCheck(dir: string, minBytes = EMBEDDED_MIN_FREE_BYTES): () => string | null {
  return () => {
    // One statfs, a few microseconds: nothing beside a commit.
    const { bavail, bsize } = statfsSync(dir)
    const free = Number(bavail) * Number(bsize)
    if (free >= minBytes) return null
    return `DATA_DIR's file system has ${Math.floor(free / 1048576)} MB free, under the ${Math.floor(minBytes / 1048576)} MB the embedded database needs to take writes`
  }
}

/**
 * Wraps an open PGlite (in memory in tests, on disk in production). See pglite.ts for the clients.
 * `shortOfRoom`, if given, is asked before each writer transaction, which fails as storage trouble
 * (see faultOf) with the reason it gives (see freeSpaceCheck).
 */
export function embeddedDatabase(pg: PGlite, onClose: () => void = () => {}, shortOfRoom?: () => string | null): Database {
  adoptDrizzleParsers(pg)
  const orm = drizzlePglite({ client: drizzleClient(pg) as unknown as PGlite, schema }) as unknown as Orm
  // The writers' transactions (raw SQL, a few statements again and again) prepare their statements.
  const statements = new StatementCache()
  // The PGlite transaction under the drizzle one a writer is handed: drizzle opens it and calls the
  // writer's callback at once, with nothing in between that could open another (see `transaction`).
  let opened: Transaction | undefined
  const writers = drizzlePglite({
    client: drizzleClient(pg, (tx) => ((opened = tx), preparingClient(pg, tx, statements))) as unknown as PGlite,
  }) as unknown as Orm
  return {
    kind: 'embedded',
    orm,
    rows: async (query, executor = orm) => rowsOf(await executor.execute(query)),
    hasRoom: shortOfRoom && (() => shortOfRoom() === null),
    async transaction(fn) {
      const short = shortOfRoom?.()
      if (short) throw new Error(short)
      return writers.transaction((tx) => fn(tx, copyInto(opened!)))
    },
    async listen(channel, onMessage, onConnect) {
      const unlisten = await pg.listen(channel, onMessage)
      onConnect?.()
      return unlisten
    },
    notify: async (channel, payload) => void (await pg.query('select pg_notify($1, $2)', [channel, payload])),
    async migrate(whileLocked) {
      // A single process owns the embedded database (see lockDataDir), so no lock is needed.
      await migratePglite(orm as never, { migrationsFolder: MIGRATIONS_FOLDER }).catch((error) => {
        throw new ConfigError(`DATA_DIR: cannot migrate the embedded database: ${errorMessage(error)}`)
      })
      await whileLocked?.(orm)
      return migrationsUnknownHere(orm)
    },
    async close() {
      await pg.close()
      onClose()
    },
  }
}

export interface DatabasePing {
  latencyMs: number
  /** False on a standby (a failover left core on a replica), a database set read-only, or an embedded one short of room. */
  writable: boolean
}

/** Round trip to the database, and whether it takes writes; throws when it does not answer. */
export async function pingDatabase(db: Database): Promise<DatabasePing> {
  const started = performance.now()
  const [row] = await db.rows<{ read_only: string }>(sql`select current_setting('transaction_read_only') as read_only`)
  return { latencyMs: performance.now() - started, writable: row.read_only !== 'on' && (db.hasRoom?.() ?? true) }
}
