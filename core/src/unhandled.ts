import { errorText } from './db'
import { stackFrames } from './http/errors'
import type { Logger } from './log'

/**
 * A rejection nobody awaits ends the process, Bun's default, and with it every request under way. The
 * database driver can leave one behind when a connection is cut (its write to the closed socket):
 * what core acknowledged is committed already, and the writer answers the commits it loses, so the
 * rejection is logged as an error and core goes on serving.
 */
export function logUnhandledRejections(log: Logger, events: NodeJS.EventEmitter = process): void {
  events.on('unhandledRejection', (reason: unknown) => {
    log.error('unhandled rejection', { error: errorText(reason), stack: stackFrames(reason) })
  })
}
