import { sql } from 'drizzle-orm'
import { errorText, type Database } from './db'
import type { Logger } from './log'

/*
 * The jobs of Postgres's background processes, done by core for the embedded database. PGlite runs
 * Postgres in single-user mode, where neither the checkpointer nor the autovacuum daemon runs.
 *
 * Without checkpoints, every byte of write-ahead log since the process started is kept (the log
 * can only be recycled up to the last checkpoint): the data directory grows by what is written,
 * twice over, until the disk is full, and a start after a crash replays all of it.
 *
 * Without vacuuming, nothing would ever:
 * - reclaim the row versions that updates and deletes leave behind: every heartbeat rewrites its
 *   window's presence row and both of its index entries, every touch a session's row; those tables
 *   and their indexes would grow with every beat, for as long as the service runs;
 * - keep the planner's statistics;
 * - freeze rows before the transaction counter comes round, about two billion transactions later.
 *   A server stops taking writes before that point; single-user mode does not, and rows never frozen
 *   would then read as written in the future, that is not at all.
 * Every VACUUM here freezes what it visits, which marks those pages all-frozen: the next one skips
 * them, so each costs what changed since the last, and no table ever needs a whole scan at once.
 *
 * On a Postgres server its own processes do all of this.
 */

/** When Postgres's processes would act, from the database's own settings (Postgres's defaults unless changed). */
export interface UpkeepRules {
  vacuumThreshold: number
  vacuumScaleFactor: number
  insertThreshold: number
  insertScaleFactor: number
  analyzeThreshold: number
  analyzeScaleFactor: number
  /** Transactions a table may go unfrozen before it is vacuumed whatever its statistics say. */
  freezeMaxAge: number
  /** Time between two looks for tables to vacuum or analyze. */
  naptimeMs: number
  /** The longest time between two checkpoints, when anything was written. */
  checkpointTimeoutMs: number
  /** Log written since the last checkpoint that calls for the next one. */
  checkpointWalBytes: number
}

export interface TableStats {
  /** As Postgres prints it: quoted where needed, with its schema unless on the search path. */
  name: string
  /**
   * Catalogs are vacuumed but not analyzed: their statistics matter little, and pg_statistic, which
   * analyzing writes, is not to be analyzed itself (autovacuum leaves it out too).
   */
  system: boolean
  /** The planner's row count, 0 until the table is first vacuumed or analyzed. */
  tuples: number
  dead: number
  insertedSinceVacuum: number
  modifiedSinceAnalyze: number
  /** Transactions since its oldest unfrozen row (of the table or its TOAST table). */
  xidAge: number
}

export interface CheckpointStats {
  /** Log written since the last checkpoint began. */
  walBytes: number
  sinceCheckpointMs: number
}

export type Upkeep = 'vacuum' | 'analyze'

/** What autovacuum would do to a table now (see "The Autovacuum Daemon" in Postgres's manual). */
export function upkeepDue(table: TableStats, rules: UpkeepRules): Upkeep | null {
  const { tuples } = table
  if (
    table.xidAge > rules.freezeMaxAge ||
    table.dead > rules.vacuumThreshold + rules.vacuumScaleFactor * tuples ||
    // A threshold of -1 turns inserts off as a reason, as it does for autovacuum.
    (rules.insertThreshold >= 0 && table.insertedSinceVacuum > rules.insertThreshold + rules.insertScaleFactor * tuples)
  ) {
    return 'vacuum'
  }
  if (!table.system && table.modifiedSinceAnalyze > rules.analyzeThreshold + rules.analyzeScaleFactor * tuples) return 'analyze'
  return null
}

/** A checkpoint writes a record of its own: less log than a page since then is nothing written. */
const WAL_PAGE_BYTES = 8192

/** Whether the checkpointer would take a checkpoint now (see "WAL Configuration" in Postgres's manual). */
export function checkpointDue({ walBytes, sinceCheckpointMs }: CheckpointStats, rules: UpkeepRules): boolean {
  return walBytes >= rules.checkpointWalBytes || (sinceCheckpointMs >= rules.checkpointTimeoutMs && walBytes >= WAL_PAGE_BYTES)
}

const SETTINGS = {
  vacuumThreshold: 'autovacuum_vacuum_threshold',
  vacuumScaleFactor: 'autovacuum_vacuum_scale_factor',
  insertThreshold: 'autovacuum_vacuum_insert_threshold',
  insertScaleFactor: 'autovacuum_vacuum_insert_scale_factor',
  analyzeThreshold: 'autovacuum_analyze_threshold',
  analyzeScaleFactor: 'autovacuum_analyze_scale_factor',
  freezeMaxAge: 'autovacuum_freeze_max_age',
  naptime: 'autovacuum_naptime',
  checkpointTimeout: 'checkpoint_timeout',
  maxWalSize: 'max_wal_size',
  completionTarget: 'checkpoint_completion_target',
}

async function readRules(db: Database): Promise<UpkeepRules> {
  // In the units pg_settings gives: naptime and checkpoint_timeout in seconds, max_wal_size in megabytes.
  const rows = await db.rows<{ name: string; setting: string }>(sql`select name, setting from pg_settings where name in ${Object.values(SETTINGS)}`)
  const found = new Map(rows.map((row) => [row.name, Number(row.setting)]))
  const setting = Object.fromEntries(Object.entries(SETTINGS).map(([key, name]) => [key, found.get(name)!])) as Record<keyof typeof SETTINGS, number>
  const { naptime, checkpointTimeout, maxWalSize, completionTarget, ...autovacuum } = setting
  return {
    ...autovacuum,
    naptimeMs: naptime * 1000,
    checkpointTimeoutMs: checkpointTimeout * 1000,
    // The checkpointer spreads a checkpoint's writes over `completionTarget` of the way to the
    // next, and so starts it early enough to stay under max_wal_size; this one writes at once.
    checkpointWalBytes: (maxWalSize * 1024 * 1024) / (1 + completionTarget),
  }
}

async function readTableStats(db: Database): Promise<TableStats[]> {
  // Statistics reach the views at most once a second, unless asked to (at the end of this statement).
  await db.rows(sql`select pg_stat_force_next_flush()`)
  return db.rows<TableStats>(sql`
    select c.oid::regclass::text as name,
      n.nspname in ('pg_catalog', 'information_schema') as system,
      greatest(c.reltuples, 0)::float8 as tuples,
      coalesce(s.n_dead_tup, 0)::float8 as dead,
      coalesce(s.n_ins_since_vacuum, 0)::float8 as "insertedSinceVacuum",
      coalesce(s.n_mod_since_analyze, 0)::float8 as "modifiedSinceAnalyze",
      greatest(age(c.relfrozenxid), coalesce(age(t.relfrozenxid), 0))::float8 as "xidAge"
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    left join pg_class t on t.oid = c.reltoastrelid
    left join pg_stat_all_tables s on s.relid = c.oid
    where c.relkind in ('r', 'm') and c.relpersistence = 'p'
    order by c.oid`)
}

async function readCheckpointStats(db: Database): Promise<CheckpointStats> {
  const [stats] = await db.rows<CheckpointStats>(sql`
    select (pg_current_wal_insert_lsn() - redo_lsn)::float8 as "walBytes",
      extract(epoch from now() - checkpoint_time)::float8 * 1000 as "sinceCheckpointMs"
    from pg_control_checkpoint()`)
  return stats
}

export type UpkeepDone = { table: string; upkeep: Upkeep } | { checkpoint: true }

export interface EmbeddedUpkeep {
  /** Looks once for all that is due, naptime or not, and does it one statement at a time; says what it did. */
  runOnce(): Promise<UpkeepDone[]>
  /** No further runs; waits for the one under way. */
  stop(): Promise<void>
}

/**
 * How often to look for a checkpoint to take: the checkpointer is told of each log segment written,
 * and a look every 10 s keeps the log within a few hundred megabytes of its limit. Tables are looked
 * at every naptime (a minute), as autovacuum does: each vacuum holds the commits up, and fewer, longer
 * ones hold up fewer requests and cost less in all (each analyzes a sample of the same size).
 */
export const UPKEEP_INTERVAL_MS = 10_000
/** Upkeep that held the commits up this long is logged at info level. */
const SLOW_UPKEEP_MS = 1_000

/**
 * Starts looking every `intervalMs` (the timer does not keep the process alive), by the database's
 * settings unless `rules` overrides some. Each statement runs between the writer's commits, as
 * everything on the embedded database runs one at a time; one that holds them up for long is logged.
 */
export interface UpkeepOptions {
  intervalMs?: number
  rules?: Partial<UpkeepRules>
}

export function startEmbeddedUpkeep(db: Database, log: Logger, options: UpkeepOptions = {}): EmbeddedUpkeep {
  let rules: UpkeepRules | undefined
  let stopped = false
  let lastTablesLook = performance.now()
  // Runs one after the other, whether they are the timer's or asked for.
  let running: Promise<unknown> = Promise.resolve()
  const inTurn = <T>(task: () => Promise<T>): Promise<T> => {
    const next = running.then(task)
    running = next.catch(() => {})
    return next
  }

  const timed = async (statement: string, fields: Record<string, string>) => {
    const started = performance.now()
    await db.rows(sql.raw(statement))
    const ms = Math.round(performance.now() - started)
    log[ms >= SLOW_UPKEEP_MS ? 'info' : 'debug']('embedded database upkeep', { ...fields, ms })
  }

  async function look(tablesToo: boolean): Promise<UpkeepDone[]> {
    rules ??= { ...(await readRules(db)), ...options.rules }
    const done: UpkeepDone[] = []
    if (tablesToo) lastTablesLook = performance.now()
    for (const table of tablesToo ? await readTableStats(db) : []) {
      const upkeep = upkeepDue(table, rules)
      // A vacuum logs what it freezes: not on a DATA_DIR short of room (see EMBEDDED_MIN_FREE_BYTES).
      if (!upkeep || stopped || db.hasRoom?.() === false) continue
      // The name comes from the catalog, quoted as Postgres quotes it; VACUUM takes no parameters.
      const command = upkeep === 'analyze' ? 'analyze' : table.system ? 'vacuum (freeze)' : 'vacuum (freeze, analyze)'
      try {
        await timed(`${command} ${table.name}`, { upkeep, table: table.name })
        done.push({ table: table.name, upkeep })
      } catch (error) {
        // One table that cannot be vacuumed (a damaged page, an index expression that raises) fails
        // again at every look: left to end the look, it kept every table after it, and the checkpoint,
        // from ever being looked after. Tried again at the next look, as autovacuum does.
        log.warn('embedded database upkeep failed; trying again later', { upkeep, table: table.name, error: errorText(error) })
      }
    }
    // Last, so that it covers what vacuuming logged (freezing logs every page it freezes).
    if (!stopped && checkpointDue(await readCheckpointStats(db), rules)) {
      await timed('checkpoint', { upkeep: 'checkpoint' })
      done.push({ checkpoint: true })
    }
    return done
  }

  const timer = setInterval(() => {
    inTurn(async () => {
      if (!stopped) await look(rules !== undefined && performance.now() - lastTablesLook >= rules.naptimeMs)
    }).catch((error) => log.warn('embedded database upkeep failed; trying again later', { error: errorText(error) }))
  }, options.intervalMs ?? UPKEEP_INTERVAL_MS)
  timer.unref()

  return {
    runOnce: () => inTurn(() => look(true)),
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
