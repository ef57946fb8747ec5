import { drizzle } from 'drizzle-orm/postgres-js'
import type { ReservedSql, Sql } from 'postgres'
import type { Orm } from './db'

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
 */
export interface PostgresTransactions {
  /** The pool's `onclose`. */
  connectionClosed(connectionId: number): void
  run<T>(client: Sql, fn: (tx: Orm) => Promise<T>): Promise<T>
  /** Stops the re-asking timer (with the pool). */
  close(): void
}

/** A reservation still waiting this long asks for another connection (and again after as long). */
const REASK_MS = 200

export function postgresTransactions(): PostgresTransactions {
  const running = new Map<number, Slot>()
  /**
   * Reservations still waiting, by their way to ask again, with when they last asked. One timer
   * for all of them: a timer made and cleared for every transaction grew core's resident size about
   * twice as fast (measured over 20,000 transactions), and with it the memory guard's collections.
   */
  const waiting = new Map<() => void, number>()
  const reasking = setInterval(() => {
    const now = performance.now()
    for (const [ask, since] of waiting) {
      if (now - since < REASK_MS) continue
      waiting.set(ask, now)
      ask()
    }
  }, REASK_MS)
  reasking.unref()

  function reserve(client: Sql): Promise<ReservedSql> {
    return new Promise((resolve, reject) => {
      let settled = false
      const ask = () =>
        client.reserve().then(
          (reserved) => (settled ? reserved.release() : (settle(), resolve(reserved))),
          (error: unknown) => settled || (settle(), reject(error)),
        )
      const settle = () => {
        settled = true
        waiting.delete(ask)
      }
      waiting.set(ask, performance.now())
      ask()
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

async function runReserved<T>(client: Sql, reserved: ReservedSql, running: Map<number, Slot>, fn: (tx: Orm) => Promise<T>): Promise<T> {
  let slot: Slot | undefined
  let lost = false
  let closed!: (error: Error) => void
  const whenClosed = new Promise<never>((_, reject) => (closed = reject))
  whenClosed.catch(() => {})
  const markLost = () => {
    lost = true
    closed(connectionLost())
  }
  /** Sends a statement unless the connection is gone, and notes a failure that says it is. */
  const send = <Q extends Promise<unknown>>(query: () => Q): Q => {
    if (lost) throw connectionLost()
    const sent = query()
    sent.catch((error: unknown) => isConnectionLost(error) && markLost())
    return sent
  }
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
    const unsafe = reserved.unsafe.bind(reserved)
    const connection = Object.assign(reserved, {
      options: client.options,
      unsafe: (query: string, params?: unknown[], options?: object) => send(() => unsafe(query, params as never, { ...options, prepare: true })),
    })
    const committed = (async () => {
      const result = await fn(drizzle(connection) as unknown as Orm)
      await begun
      await send(() => reserved`commit`)
      return result
    })()
    const result = await Promise.race([committed, whenClosed])
    reserved.release()
    return result
  } catch (error) {
    if (!lost) await send(() => reserved`rollback`).catch(() => {})
    if (!lost) reserved.release()
    throw error
  } finally {
    if (slot?.lost === markLost) slot.lost = null
  }
}

/**
 * The connection is gone: postgres.js's own connection errors and the socket's carry `errno`; the
 * server ending the session (shutdown, terminated backend) says FATAL or PANIC.
 */
function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { errno, severity } = error as { errno?: unknown; severity?: unknown }
  return errno !== undefined || severity === 'FATAL' || severity === 'PANIC'
}

const connectionLost = () =>
  Object.assign(new Error('the database connection was lost during the transaction'), { code: 'CONNECTION_CLOSED', errno: 'CONNECTION_CLOSED' })
