import type { Orm } from './db'

/*
 * What the writer (writer.ts) writes with: one sink per table or feature, each writing the rows of
 * many requests in few statements inside a commit's transaction.
 */

/** Per project, how many of the rows a sink was given were stored already: resends. */
export type AlreadyStored = Map<string, number>

/**
 * Commits take their locks in one order, so that concurrent commits (other processes) never wait on
 * each other in a circle: sinks by phase, then by name (a COPY last), then the quota's record.
 * - `sessions`: sessions' rows, which the phases after read as this commit leaves them;
 * - `people`: sinks that decide which end users the commit writes (identify, its aliases and its
 *   lock), handing them to the end-user sink (see `feeds`), so that a commit locks end users in one
 *   statement;
 * - `rows`, the default: everything else.
 */
export type SinkPhase = 'sessions' | 'people' | 'rows'
const PHASES: readonly SinkPhase[] = ['sessions', 'people', 'rows']

/** Gives rows to a later sink of the same commit (one of the giving sink's `feeds`). */
export type Hand = <Row>(sink: Sink<Row>, rows: readonly Row[]) => void

/** One table's way of writing many rows in one statement, inside the commit's transaction. */
export interface Sink<Row> {
  /** Orders the sink among the commit's others (see SinkPhase). */
  readonly name: string
  readonly phase?: SinkPhase
  /**
   * A sink whose rows are the items its requests count against the monthly quota (one row per item)
   * says which of them were stored already, so that a resend is not counted a second time. `hand`
   * is the writer's, for a sink that `feeds` others (written only by the writer, then).
   */
  write(tx: Orm, rows: Row[], hand?: Hand): Promise<void | AlreadyStored>
  /**
   * Optional: the sinks this one may `hand` rows to as it writes. They must come after it and have
   * no `copy`; the sinks after it are written once it has finished.
   */
  readonly feeds?: readonly Sink<never>[]
  /**
   * Optional, for a sink that only appends rows and whose key makes a resend a no-op: the same rows
   * for `COPY ... FROM STDIN` (`statement`), in COPY's text format, sorted as `write` sorts them.
   * Postgres spends much less of its time on rows it is copied than on rows an insert selects (it
   * fills heap pages and WAL records many rows at a time), and its time is what bounds a busy writer.
   * See copyAndCommit in writer.ts.
   */
  readonly copy?: { statement: string; text(rows: Row[]): string }
  /**
   * Optional: `write` sends one statement at most, at once (never one after another's answer), so a
   * COPY can follow it in the same round trip (see CopyIn).
   */
  readonly singleStatement?: boolean
  /** Optional: called with the same array `write` had, once its transaction committed. */
  committed?(rows: Row[]): void
}

export interface SinkRows<Row = unknown> {
  sink: Sink<Row>
  rows: Row[]
}

/** Sinks' entries in the order commits lock in (see SinkPhase). */
export function inLockOrder(entries: SinkRows[]): SinkRows[] {
  const rank = (entry: SinkRows) => PHASES.indexOf(entry.sink.phase ?? 'rows')
  entries.sort((a, b) => rank(a) - rank(b) || (a.sink.name < b.sink.name ? -1 : a.sink.name > b.sink.name ? 1 : 0))
  entries.forEach((entry, i) => {
    if (i > 0 && entries[i - 1].sink.name === entry.sink.name) throw new Error(`two sinks are named ${entry.sink.name}`)
  })
  return entries
}
