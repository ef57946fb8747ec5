import { sql } from 'drizzle-orm'
import type { Database } from './db'
import { errorText } from './db'
import type { Logger } from './log'

/*
 * Autovacuum's job, done by core for the embedded database. PGlite runs Postgres in single-user mode,
 * where the autovacuum daemon does not run, so nothing else would ever:
 * - reclaim the row versions that updates and deletes leave behind: every heartbeat rewrites its
 *   window's presence row and both of its index entries, every touch a session's row; those tables
 *   and their indexes would grow with every beat, for as long as the service runs;
 * - keep the planner's statistics;
 * - freeze rows before the transaction counter comes round, about two billion transactions later.
 *   A server stops taking writes before that point; single-user mode does not, and rows never frozen
 *   would then read as written in the future, that is not at all.
 * Every VACUUM here freezes what it visits, which marks those pages all-frozen: the next one skips
 * them, so each costs what changed since the last, and no table ever needs a whole scan at once.
 * On a Postgres server the autovacuum daemon does all of this.
 */

/** Autovacuum's rules, read from the database's own settings (Postgres's defaults unless changed). */
export interface AutovacuumRules {
  vacuumThreshold: number
  vacuumScaleFactor: number
  insertThreshold: number
  insertScaleFactor: number
  analyzeThreshold: number
  analyzeScaleFactor: number
  /** Transactions a table may go unfrozen before it is vacuumed whatever its statistics say. */
  freezeMaxAge: number
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

export type Upkeep = 'vacuum' | 'analyze'

/** What autovacuum would do to a table now (see "The Autovacuum Daemon" in Postgres's manual). */
export function upkeepDue(table: TableStats, rules: AutovacuumRules): Upkeep | null {
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

const SETTINGS: Record<keyof AutovacuumRules, string> = {
  vacuumThreshold: 'autovacuum_vacuum_threshold',
  vacuumScaleFactor: 'autovacuum_vacuum_scale_factor',
  insertThreshold: 'autovacuum_vacuum_insert_threshold',
  insertScaleFactor: 'autovacuum_vacuum_insert_scale_factor',
  analyzeThreshold: 'autovacuum_analyze_threshold',
  analyzeScaleFactor: 'autovacuum_analyze_scale_factor',
  freezeMaxAge: 'autovacuum_freeze_max_age',
}

async function readRules(db: Database): Promise<AutovacuumRules> {
  const rows = await db.rows<{ name: string; setting: string }>(sql`select name, setting from pg_settings where name in ${Object.values(SETTINGS)}`)
  const setting = new Map(rows.map((row) => [row.name, Number(row.setting)]))
  return Object.fromEntries(Object.entries(SETTINGS).map(([rule, name]) => [rule, setting.get(name)])) as unknown as AutovacuumRules
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

export interface Vacuuming {
  /** Looks once and does what is due, one table at a time; says what it did. */
  runOnce(): Promise<{ table: string; upkeep: Upkeep }[]>
  /** No further runs; waits for the one under way. */
  stop(): Promise<void>
}

/** Autovacuum's pause between looks. */
export const VACUUM_INTERVAL_MS = 60_000
/** Upkeep that held the commits up this long is logged at info level. */
const SLOW_UPKEEP_MS = 1_000

/**
 * Starts looking every `intervalMs` (the timer does not keep the process alive), by autovacuum's
 * rules unless `rules` overrides some. Each statement runs between the writer's commits, as
 * everything on the embedded database runs one at a time; one that holds them up for long is logged.
 */
export function startVacuuming(db: Database, log: Logger, options: { intervalMs?: number; rules?: Partial<AutovacuumRules> } = {}): Vacuuming {
  let rules: AutovacuumRules | undefined
  let stopped = false
  // Runs one after the other, whether they are the timer's or asked for.
  let running: Promise<unknown> = Promise.resolve()
  const inTurn = <T>(task: () => Promise<T>): Promise<T> => {
    const next = running.then(task)
    running = next.catch(() => {})
    return next
  }

  async function runOnce() {
    rules ??= { ...(await readRules(db)), ...options.rules }
    const done: { table: string; upkeep: Upkeep }[] = []
    for (const table of await readTableStats(db)) {
      const upkeep = upkeepDue(table, rules)
      if (!upkeep || stopped) continue
      const started = performance.now()
      // The name comes from the catalog, quoted as Postgres quotes it; VACUUM takes no parameters.
      const command = upkeep === 'analyze' ? 'analyze' : table.system ? 'vacuum (freeze)' : 'vacuum (freeze, analyze)'
      await db.rows(sql.raw(`${command} ${table.name}`))
      const ms = Math.round(performance.now() - started)
      log[ms >= SLOW_UPKEEP_MS ? 'info' : 'debug']('embedded database upkeep', { table: table.name, upkeep, ms })
      done.push({ table: table.name, upkeep })
    }
    return done
  }

  const timer = setInterval(() => {
    inTurn(async () => {
      if (!stopped) await runOnce()
    }).catch((error) => log.warn('embedded database upkeep failed; trying again later', { error: errorText(error) }))
  }, options.intervalMs ?? VACUUM_INTERVAL_MS)
  timer.unref()

  return {
    runOnce: () => inTurn(runOnce),
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
