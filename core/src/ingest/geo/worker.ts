import { ConfigError } from '../../config'
import type { LogFields } from '../../log'
import { openGeoDatabase, type GeoDatabase } from './reader'
import type { FromGeoWorker, ToGeoWorker } from './worker-client'

/**
 * The GeoIP worker: the database is mapped and read on this thread, not on core's main one (see
 * worker-client.ts for why). Its first message names the files to open; every one after it is a
 * lookup, answered with its id.
 */

const scope = self as unknown as { onmessage: ((event: MessageEvent<ToGeoWorker>) => void) | null; postMessage(message: FromGeoWorker): void }
const post = (message: FromGeoWorker) => scope.postMessage(message)

/** What the reader says (a file read rather than mapped, a damaged part found) goes to core's log. */
const log = {
  warn: (message: string, fields?: LogFields) => post({ log: 'warn', message, fields }),
  error: (message: string, fields?: LogFields) => post({ log: 'error', message, fields }),
}

let database: GeoDatabase | undefined

scope.onmessage = ({ data }) => {
  if (Array.isArray(data)) {
    const [id, address] = data
    return post([id, database?.lookup(address) ?? null])
  }
  try {
    database = openGeoDatabase(data.open, log)
    post({ opened: true })
  } catch (error) {
    post({ failed: (error as Error).message, setting: error instanceof ConfigError })
  }
}
