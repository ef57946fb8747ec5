import { drizzle } from 'drizzle-orm/postgres-js'
import type { Writable } from 'node:stream'
import type { ReservedSql, Sql } from 'postgres'
import type { CopyIn, Orm, PendingCopy } from './db'
import { staleSession } from './storage-errors'

/**
 * The writer's transactions on Postgres, each on a connection reserved from the pool. BEGIN goes out
 * with the first statements instead of waiting for an answer of its own, which on a busy writer is
 * most of what a short transaction costs, and the statements are prepared once per connection.
 *
 * Connections are lost when the server restarts, fails over or is cut off, and postgres.js (3.4.9)
 * mishandles that in two places a transaction has to step around:
 * - A reserved connection that lost its server must not be used again, not even for ROLLBACK, nor
 *   handed back: postgres.js then writes to the socket it dropped, which throws from a timer, out of
 *   reach of any catch, and ends the process (porsager/postgres#1208); on a socket that failed but
 *   has not closed yet, the statement waits forever, as do statements queued behind one still being
 *   described when the connection closes. So the transaction fails as soon as a statement reports
 *   the connection lost or the pool reports it closed (the pool must be made with
 *   `onclose: connectionClosed`); nothing more is sent on it and it is left to the pool, which
 *   reconnects it by itself. The server rolls back what it had of the transaction.
 * - A reservation still waiting when another connection closes can be handed to that connection's
 *   reconnection and dropped there, never to be answered (porsager/postgres#1195). So while one
 *   waits, another is asked for every REASK_MS; the first connection to come is taken, and any later
 *   one handed back.
 * - A reservation is not settled at all while the server only closes connections unanswered (a proxy or
 *   a container's published port in front of a Postgres that is down): postgres.js connects again for
 *   it without end. So a reservation not served within `reserveTimeoutMs` gives up, as a connection
 *   failure: the writer has given its commit up by then (commitTimeoutMs) and answered 503, and one
 *   left waiting would ask again every REASK_MS, hold the batch it was given for as long as the outage
 *   lasts, and run it once the server is back.
 */
export interface PostgresTransactions {
  /** The pool's `onclose`. */
  connectionClosed(connectionId: number): void
  run<T>(client: Sql, fn: (tx: Orm, copyIn: CopyIn) => Promise<T>): Promise<T>
  /** Stops the re-asking timer (with the pool). */
  close(): void
}

/** A reservation still waiting this long asks for another connection (and again after as long). */
const REASK_MS = 200
/** A reservation still waiting this long gives up: as long as the writer waits for a commit (commitTimeoutMs). */
const RESERVE_TIMEOUT_MS = 10_000

/** A reservation still waiting: its way to ask again, and to give up. */
interface Waiting {
  ask(): void
  giveUp(): void
}

export function postgresTransactions({ reserveTimeoutMs = RESERVE_TIMEOUT_MS }: { reserveTimeoutMs?: number } = {}): PostgresTransactions {
  const running = new Map<number, Slot>()
  /**
   * Reservations still waiting, with when they first asked. One timer for all of them: a timer made
   * and cleared for every transaction grew core's resident size about twice as fast (measured over
   * 20,000 transactions), and with it the memory guard's collections.
   */
  const waiting = new Map<Waiting, number>()
  const reasking = setInterval(() => {
    const now = performance.now()
    for (const [reservation, since] of waiting) {
      if (now - since >= reserveTimeoutMs) reservation.giveUp()
      else if (now - since >= REASK_MS) reservation.ask()
    }
  }, REASK_MS)
  reasking.unref()

  function reserve(client: Sql): Promise<ReservedSql> {
    return new Promise((resolve, reject) => {
      let settled = false
      const settle = () => {
        settled = true
        waiting.delete(reservation)
      }
      const reservation: Waiting = {
        // Asks still pending when it settled are handed back as they come.
        ask: () =>
          void client.reserve().then(
            (reserved) => (settled ? reserved.release() : (settle(), resolve(reserved))),
            (error: unknown) => settled || (settle(), reject(error)),
          ),
        giveUp: () => {
          settle()
          reject(noConnection(reserveTimeoutMs))
        },
      }
      waiting.set(reservation, performance.now())
      reservation.ask()
    })
  }

  return {
    connectionClosed: (connectionId) => running.get(connectionId)?.lost?.(),
    run: async (client, fn) => runReserved(client, await reserve(client), running, fn),
    close: () => clearInterval(reasking),
  }
}

/**
 * The transaction under way on one connection, by the connection's id. A slot is made once per
 * connection and its `lost` set and cleared by each transaction: with a map entry set and deleted
 * by every transaction instead, each left about three times the heap garbage (measured over 20,000
 * transactions), and the memory guard's full collections came twice as often under load.
 */
interface Slot {
  lost: (() => void) | null
}

async function runReserved<T>(client: Sql, reserved: ReservedSql, running: Map<number, Slot>, fn: (tx: Orm, copyIn: CopyIn) => Promise<T>): Promise<T> {
  let slot: Slot | undefined
  let lost = false
  /** A statement sent while a COPY waits for its data would reach the server as COPY data (a protocol error). */
  let copying = false
  let closed!: (error: Error) => void
  const whenClosed = new Promise<never>((_, reject) => (closed = reject))
  whenClosed.catch(() => {})
  const markLost = () => {
    lost = true
    closed(connectionLost())
  }
  /** Notes a failure that says the connection is gone. */
  const watch = <Q extends Promise<unknown>>(sent: Q): Q => {
    sent.catch((error: unknown) => isConnectionLost(error) && markLost())
    return sent
  }
  /** Sends a statement unless the connection is gone. */
  const send = <Q extends Promise<unknown>>(query: () => Q): Q => {
    if (lost) throw connectionLost()
    if (copying) throw new Error('a statement was sent on a transaction while its COPY was under way')
    return watch(query())
  }
  // The connection's own, before drizzle's is put in its place (below).
  const unsafe = reserved.unsafe.bind(reserved)
  /** Set once a COPY committed the transaction with its rows (see CopyIn). */
  let committedByCopy = false
  let pending: PendingCopy | undefined
  const copyIn: CopyIn = (statement) =>
    (pending = pendingCopy(
      () => {
        if (lost) throw connectionLost()
        const copy = copyQuery(unsafe(`savepoint copy_in; ${statement}; commit`), (ok) => {
          copying = false
          committedByCopy = ok
        })
        copying = true
        watch(copy.done).catch(() => {})
        return copy
      },
      () => (lost ? Promise.resolve() : send(() => reserved`rollback to savepoint copy_in`)),
      () => lost,
    ))
  // `onexecute` is how postgres.js's own transactions learn their connection (internal: should a later
  // version drop it, a failed statement still tells a lost connection, only not a quiet close).
  const begun = send(() =>
    reserved.unsafe('begin', [], {
      onexecute: (connection: { id: number }) => {
        slot = running.get(connection.id)
        if (!slot) running.set(connection.id, (slot = { lost: null }))
        slot.lost = markLost
        return true
      },
    } as never),
  )
  begun.catch(() => {}) // its failure fails the statements after it, which is what is reported
  try {
    // drizzle reads the type parsers from `options`, which a reserved connection shares with its pool.
    const connection = Object.assign(reserved, {
      options: client.options,
      unsafe: (query: string, params?: unknown[], options?: object) => send(() => unsafe(query, params as never, { ...options, prepare: true })),
    })
    const orm = drizzle(connection) as unknown as Orm
    const committed = (async () => {
      const result = await fn(orm, copyIn)
      await begun
      if (committedByCopy) return result
      // A transaction an error left aborted answers COMMIT with ROLLBACK, and no error: never a success.
      const { command } = await send(() => reserved`commit`)
      if (command !== 'COMMIT') throw new Error(`the transaction was rolled back (${command})`)
      return result
    })()
    const result = await Promise.race([committed, whenClosed])
    reserved.release()
    return result
  } catch (error) {
    await pending?.cancel() // a COPY still waiting for its rows would take the ROLLBACK for one
    if (!lost) await send(() => reserved`rollback`).catch(() => {})
    if (!lost && staleSession(error)) await endSession(reserved, send, whenClosed)
    if (!lost) reserved.release()
    throw error
  } finally {
    if (slot?.lost === markLost) slot.lost = null
  }
}

/**
 * Ends a session that failed by its own settings (staleSession): with idle_session_timeout at 1 ms
 * the server ends it as soon as it is idle, with nothing of ours pending on it, and the pool handles
 * that as any connection the server closed (the transaction sees it lost and leaves it to the pool).
 * Not postgres.js's `terminate()` on the reserved connection: later reservations then sometimes
 * waited out RESERVE_TIMEOUT_MS for a connection. Nor pg_terminate_backend of its own pid: its FATAL
 * arrives while the statement is active, and postgres.js keeps it past the close and fails the next
 * session's first reservation with it. Servers before 14 refuse the setting: the session is handed
 * back as before.
 */
async function endSession(reserved: ReservedSql, send: <Q extends Promise<unknown>>(query: () => Q) => Q, whenClosed: Promise<never>): Promise<void> {
  try {
    await send(() => reserved`set idle_session_timeout = 1`)
  } catch {
    return
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([whenClosed.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, SESSION_END_MS)))])
  clearTimeout(timer)
}

/** How long a session asked to end is waited for after it answered (see endSession). */
const SESSION_END_MS = 1_000

/**
 * The connection is gone: postgres.js's own connection errors and the socket's carry `errno`; the
 * server ending the session (shutdown, terminated backend) says FATAL or PANIC.
 */
function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { errno, severity } = error as { errno?: unknown; severity?: unknown }
  return errno !== undefined || severity === 'FATAL' || severity === 'PANIC'
}

const noConnection = (ms: number) =>
  Object.assign(new Error(`no database connection within ${ms} ms`), { code: 'CONNECT_TIMEOUT', errno: 'CONNECT_TIMEOUT' })

const connectionLost = () =>
  Object.assign(new Error('the database connection was lost during the transaction'), { code: 'CONNECTION_CLOSED', errno: 'CONNECTION_CLOSED' })

/**
 * The COPY of CopyIn, sent a turn of the event loop later: the statements issued before it reach the
 * connection only a few promise callbacks after drizzle is given them, and the COPY must follow them
 * (what follows a COPY before its rows would be read as its rows). `rollback` restores the savepoint,
 * if the connection is not `lost`.
 */
function pendingCopy(send: () => SentCopy, rollback: () => Promise<unknown>, lost: () => boolean): PendingCopy {
  const sent = new Promise<SentCopy>((resolve, reject) =>
    setImmediate(() => {
      try {
        const copy = send()
        copy.query.catch(() => {}) // sends it; its outcome is `done`'s
        resolve(copy)
      } catch (error) {
        reject(error)
      }
    }),
  )
  sent.catch(() => {})
  let settled = false
  return {
    async commit(text) {
      if (settled) throw new Error('this COPY was settled already')
      settled = true
      const { stream, done } = await sent
      try {
        const writable = await stream
        passOnlyFailures(writable)
        writable.end(text)
        await done
      } catch (error) {
        // Its own failure (the connection lost, a savepoint never made) is the one to report then.
        await rollback()
        throw error
      }
    },
    async cancel() {
      // On a lost connection there is nothing to restore, and a COPY it never sent never settles.
      if (settled || lost()) return
      settled = true
      const copy = await sent.catch(() => undefined)
      if (!copy) return
      const writable = await copy.stream.catch(() => undefined)
      writable?.destroy(new Error('the COPY was given up')) // CopyFail: the server fails the COPY
      await copy.done.catch(() => {})
      await rollback().catch(() => {})
    },
  }
}

/**
 * postgres.js (3.4.9) makes its COPY stream with `autoDestroy`, and its destroy writes a CopyFail
 * whatever the reason: once a COPY has finished, that is one more write and message on every
 * commit, which the server, no longer copying, reads and drops (and servers that speak the protocol
 * less strictly may answer). Only a stream that fails is destroyed the stream's way; one that ended
 * has nothing left to tell the server (its final step already wrote CopyDone and left copy mode).
 */
function passOnlyFailures(writable: Writable): void {
  const destroy = writable._destroy
  writable._destroy = (error, callback) => (error ? destroy.call(writable, error, callback) : callback(null))
}

interface SentCopy {
  /** postgres.js's query, sent once awaited. */
  query: Promise<unknown>
  /** Takes the rows once the server asks for them. */
  stream: Promise<Writable>
  /** Settles with the whole statement (savepoint, COPY, commit). */
  done: Promise<void>
}

/**
 * A postgres.js query ending in a COPY FROM STDIN, made and not sent yet. postgres.js (3.4.9) settles
 * nothing when the server refuses the rows after the stream ended, which is when a duplicate key is
 * found: the stream neither finishes nor fails, so awaiting it waits forever (porsager/postgres#1173).
 * The query itself is told, though (its `resolve` called a second time, with the command's result, or
 * its `reject` with the error): `done` and `settled` listen there.
 */
function copyQuery(made: unknown, settled: (ok: boolean) => void): SentCopy {
  const query = made as CopyQuery
  let streamed!: (stream: Writable) => void
  let refused!: (error: unknown) => void
  let finished!: () => void
  let failed!: (error: unknown) => void
  const stream = new Promise<Writable>((resolve, reject) => ((streamed = resolve), (refused = reject)))
  const done = new Promise<void>((resolve, reject) => ((finished = resolve), (failed = reject)))
  // Either may fail before anyone awaits it (the connection lost while other statements run): an
  // unhandled rejection would end the process.
  stream.catch(() => {})
  done.catch(() => {})
  const { resolve, reject } = query
  let answers = 0
  query.resolve = (value) => {
    resolve(value)
    if (answers++ > 0) return settled(true), finished()
    const writable = value as Writable
    writable.on('error', () => {}) // reported by `done`
    streamed(writable)
  }
  query.reject = (error) => {
    reject(error)
    settled(false)
    refused(error)
    failed(error)
  }
  query.simple() // COPY data follows a simple query only
  return { query, stream, done }
}

/** What copyQuery uses of postgres.js's query object (internal, see there). */
interface CopyQuery extends Promise<unknown> {
  resolve(value: unknown): void
  reject(error: unknown): void
  simple(): void
}
