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

/**
 * An exception nobody catches leaves core in a state no one can vouch for, so core still ends, as
 * Bun would, but first says why in its log, a line like every other one (Bun's own report is text on
 * stderr, which a log collector reading JSON lines drops), and exits 1 for its supervisor to start it
 * again. What it acknowledged is committed; what it had not answered was never acknowledged, and
 * trackers send it again.
 */
export function exitOnUncaughtExceptions(log: Logger): void {
  process.on('uncaughtException', (error: unknown) => {
    const type = error instanceof Error ? error.name : typeof error
    log.error('uncaught exception; exiting', { type, error: errorText(error), stack: stackFrames(error) })
    process.exit(1)
  })
}
