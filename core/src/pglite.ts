import { parse, PGlite, protocol, types, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite'
import type { CopyIn, PendingCopy } from './db'

/**
 * PGlite as drizzle uses it, made cheaper where it costs the embedded database most. PGlite runs
 * Postgres on the thread that also serves requests, so what a statement costs besides its own work
 * is throughput lost: see `drizzleClient` and `preparingClient`.
 */
export interface QueryClient {
  query(query: string, params?: unknown[], options?: QueryOptions): Promise<Results>
}

/** Types drizzle reads as the text Postgres sends: timestamps, dates, intervals and their arrays, numeric[]. */
const KEPT_AS_TEXT = [types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, 1231, 1115, 1185, 1187, 1182]
const keptAsText = new Set(KEPT_AS_TEXT.map(String))

/**
 * drizzle passes its result parsers (KEPT_AS_TEXT) with every query, and PGlite copies its own map
 * of some 300 types to merge them in, every query. Made PGlite's own once (`adoptDrizzleParsers`),
 * they need not come along: a query that brings only those goes without them; anything else is
 * passed on as it came.
 */
const withoutDrizzleParsers = (options?: QueryOptions): QueryOptions | undefined =>
  options?.parsers && Object.keys(options.parsers).every((oid) => keptAsText.has(oid)) ? { ...options, parsers: undefined } : options

export function adoptDrizzleParsers(pg: PGlite): void {
  for (const oid of KEPT_AS_TEXT) pg.parsers[oid] = (text: string) => text
}

/** A client for drizzle whose transactions hand their statements to `inTransaction`. */
export function drizzleClient(pg: PGlite, inTransaction: (tx: Transaction) => QueryClient = plainClient) {
  return {
    ...plainClient(pg),
    transaction: <T>(fn: (tx: QueryClient) => Promise<T>) => pg.transaction((tx) => fn(inTransaction(tx))),
  }
}

const plainClient = (target: PGlite | Transaction): QueryClient => ({
  query: (query, params, options) => target.query(query, params, withoutDrizzleParsers(options)),
})

interface Statement {
  name: string
  /** Type of each parameter, to serialize values as PGlite does. */
  paramTypes: number[]
}

/** The writer's statements are few and fixed; texts past this many are run without preparing. */
const MAX_PREPARED = 64

/** Statements prepared on one PGlite, by text, and texts seen once (prepared when seen again). */
export class StatementCache {
  readonly prepared = new Map<string, Statement>()
  readonly seen = new Set<string>()
  /** Names are never reused, so that a failed preparation cannot collide with a later one. */
  count = 0
}

/**
 * A transaction whose statements are prepared once, by name, the second time their text is seen.
 * PGlite's `query` parses, plans and describes every statement anew, in six calls into Postgres;
 * a prepared one is bound, executed and read in one. On the writer's multi-row statements that is
 * a third or more of each. (Postgres itself replans a prepared statement when the schema changes.)
 */
export function preparingClient(pg: PGlite, tx: Transaction, cache: StatementCache): QueryClient {
  const plain = plainClient(tx)
  return {
    async query(text, params = [], options) {
      if (!cache.prepared.has(text) && (!cache.seen.has(text) || cache.prepared.size >= MAX_PREPARED)) {
        if (cache.seen.size < MAX_PREPARED * 4) cache.seen.add(text)
        return plain.query(text, params, options)
      }
      // Prepared and run in one hold of PGlite, taken when the statement is issued: the writer issues
      // a commit's statements together, and those after this one must not run while it is prepared.
      const { messages } = await pg.runExclusive(async () => {
        const statement = cache.prepared.get(text) ?? (await prepare(pg, text, cache))
        const values = params.map((value, i) => (value == null ? null : (pg.serializers[statement.paramTypes[i]]?.(value) ?? String(value))))
        return pg.execProtocol(joined([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]), {
          syncToFs: false,
        })
      })
      return parse.parseResults(messages, pg.parsers, withoutDrizzleParsers(options))[0]
    },
  }
}

const { serialize } = protocol

/** Prepares `text` on PGlite, already held, under a name of its own, and keeps it in the cache. */
async function prepare(pg: PGlite, text: string, cache: StatementCache): Promise<Statement> {
  const name = `sightline_${++cache.count}`
  const { messages } = await pg.execProtocol(joined([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
    syncToFs: false,
  })
  const statement = { name, paramTypes: parse.parseDescribeStatementResults(messages) }
  cache.prepared.set(text, statement)
  cache.seen.delete(text)
  return statement
}

/**
 * PGlite hands the blob to Postgres a byte at a time in JavaScript, about 20 ns a byte here: a 1.5 MB
 * COPY takes 25 to 40 ms where passing the rows as one parameter costs next to nothing, and from about
 * 300 KB of rows the insert is the faster way (1,000 events of 1.5 KB: 60 ms against 144 by COPY).
 */
const BLOB_COPY_MAX_CHARS = 256 * 1024

/**
 * The writer's COPY (see CopyIn) on PGlite, which reads COPY data from a file rather than from the
 * client: the rows are handed over as the blob it serves at `/dev/blob`. Postgres stores copied rows
 * for much less than an insert selecting them from JSON, and PGlite runs that work on the thread that
 * serves requests: measured on 18-row commits of custom events, about 0.6 ms instead of 0.85.
 * Nothing goes before the rows here (the statement is sent with them, in one call with its savepoint),
 * and the transaction commits as the writer's callback returns, right after.
 */
export function copyInto(tx: Transaction): CopyIn {
  const copyIn = (statement: string): PendingCopy => {
    const fromBlob = statement.replace(/ from stdin$/i, " from '/dev/blob'")
    if (fromBlob === statement) throw new Error(`not a COPY from stdin: ${statement}`)
    return {
      async commit(text) {
        try {
          await tx.exec(`savepoint copy_in; ${fromBlob}`, { blob: new Blob([text]) })
        } catch (error) {
          await tx.exec('rollback to savepoint copy_in')
          throw error
        }
      },
      cancel: async () => {},
    }
  }
  return Object.assign(copyIn, { maxTextLength: BLOB_COPY_MAX_CHARS })
}

function joined(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

/**
 * Postgres's settings for the embedded database, on top of PGlite's own start parameters. The
 * buffer pool lives in PGlite's WebAssembly memory, which never shrinks, and PGlite's initdb sizes
 * it at 128 MB; the data files are read through the operating system's page cache anyway, so a
 * small pool costs little. Measured on the bench (P5): 32 MB takes about 100 MB off core's resident
 * size at start and under load, at the same throughput within the noise.
 */
const SETTINGS = { shared_buffers: '32MB' }

export function embeddedStartOptions(): { startParams?: string[] } {
  // PGlite's defaults (single-user mode, its fsync and I/O settings) are replaced by `startParams`,
  // so they are kept and extended; should a later PGlite move them, it starts with its own.
  const defaults = (PGlite as unknown as { defaultStartParams?: unknown }).defaultStartParams
  if (!Array.isArray(defaults)) return {}
  return { startParams: [...defaults, ...Object.entries(SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])] }
}
