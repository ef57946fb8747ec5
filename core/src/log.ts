import type { LogLevel } from './config'

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export type LogFields = Record<string, string | number | boolean | null | undefined>

export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
  enabled(level: LogLevel): boolean
}

let stdoutClosed = false
let watchingStdout = false

/**
 * Writes to stdout until it is closed under core (whatever read it, a log shipper or a `| tee`, went
 * away), then drops the lines: a write to a closed pipe fails later, as an error event that nothing
 * would catch and that would end the process, requests under way unanswered. Losing the log must
 * not stop the service.
 */
function writeStdout(line: string): void {
  if (!watchingStdout) {
    watchingStdout = true
    process.stdout.on('error', () => (stdoutClosed = true))
  }
  if (!stdoutClosed) process.stdout.write(line)
}

/** One JSON object per line, so any log shipper can read it. Never pass keys or bodies in `fields`. */
export function createLogger(level: LogLevel, write: (line: string) => void = writeStdout): Logger {
  const threshold = RANK[level]
  const emit = (at: Exclude<LogLevel, 'silent'>) => (message: string, fields?: LogFields) => {
    if (RANK[at] < threshold) return
    write(JSON.stringify({ time: new Date().toISOString(), level: at, msg: message, ...fields }) + '\n')
  }
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    enabled: (at) => RANK[at] >= threshold,
  }
}
