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

/** One JSON object per line, so any log shipper can read it. Never pass keys or bodies in `fields`. */
export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
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
