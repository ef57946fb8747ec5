import type { Database } from '@sightline/core/db'
import type { TestDatabase } from './database'

/**
 * The real database with its transactions counted, for a core to use: how many a commit took (one
 * that fails is split by the writer, and its parts committed apart).
 */
export function countedTransactions(database: TestDatabase): { database: TestDatabase; transactions(): number } {
  let transactions = 0
  const db = new Proxy(database.db, {
    get: (target, name, receiver) =>
      name === 'transaction'
        ? (fn: Parameters<Database['transaction']>[0]) => {
            transactions++
            return target.transaction(fn)
          }
        : Reflect.get(target, name, receiver),
  })
  return { database: { ...database, db }, transactions: () => transactions }
}
