import { readJson, type KeyValue } from './storage'
import type { LogEntry, LoggingConfig, LogLevel } from './types'

const LEVELS: LogLevel[] = ['none', 'error', 'warn', 'info', 'debug']
const STORAGE_KEY = 'sl_logs'
/** `viewLogs()` keeps the latest entries only. */
export const LOG_ENTRIES_KEPT = 100

export type Logger = ReturnType<typeof createLogger>

/** What the tracker's own console lines start with (console tracking leaves them out). */
export const LOG_PREFIX = '[sightline] '

/** The tracker's own diagnostics (not the page's console logs, which are data). */
export function createLogger(level: LogLevel, tab: KeyValue, console: Console, now: () => number) {
  /** The last level logged; an unknown one (-1) logs nothing, as 'none' (0) does. */
  let threshold = LEVELS.indexOf(level)
  let toConsole = true
  let toStorage = true
  let entries: LogEntry[] = readJson<LogEntry[]>(tab, STORAGE_KEY) ?? []

  const at = (entryLevel: 'error' | 'warn' | 'info') => (message: string) => {
    if (LEVELS.indexOf(entryLevel) > threshold) return
    if (toConsole) console[entryLevel](LOG_PREFIX + message)
    entries = [...entries, { time: now(), level: entryLevel, message }].slice(-LOG_ENTRIES_KEPT)
    if (toStorage) tab.set(STORAGE_KEY, JSON.stringify(entries))
  }

  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    configure(config: LoggingConfig) {
      if (config.level) threshold = LEVELS.indexOf(config.level)
      toConsole = config.enableConsole ?? toConsole
      toStorage = config.enableStorage ?? toStorage
      if (!toStorage) tab.remove(STORAGE_KEY)
    },
    entries: () => [...entries],
  }
}
