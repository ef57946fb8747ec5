import { json, readJson, type KeyValue } from './storage'
import type { LogEntry, LoggingConfig, LogLevel } from './types'

const LEVELS: LogLevel[] = ['none', 'error', 'warn', 'info', 'debug']
const STORAGE_KEY = 'sl_logs'
/** `viewLogs()` keeps the latest entries only. */
export const LOG_ENTRIES_KEPT = 100

export type Logger = ReturnType<typeof createLogger>

/** What the tracker's own console lines start with (console tracking leaves them out). */
export const LOG_PREFIX = '[sightline] '

/** The tracker's own diagnostics (not the page's console logs, which are data). */
export function createLogger(level: LogLevel | undefined, tab: KeyValue, console: Console, now: () => number) {
  /** The last level logged: none (0) to debug (4); none given, or an unknown one (a typo), is warn (2). */
  const levelOf = (name?: LogLevel) => LEVELS.indexOf(name!) + 1 || 3
  let threshold = levelOf(level)
  let toConsole = true
  let toStorage = true
  let entries: LogEntry[] = readJson<LogEntry[]>(tab, STORAGE_KEY) ?? []

  const at = (entryLevel: 'error' | 'warn' | 'info') => (message: string) => {
    if (levelOf(entryLevel) > threshold) return
    if (toConsole) console[entryLevel](LOG_PREFIX + message)
    entries = [...entries, { time: now(), level: entryLevel, message }].slice(-LOG_ENTRIES_KEPT)
    if (toStorage) tab.set(STORAGE_KEY, json(entries))
  }

  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    configure(config: LoggingConfig) {
      if (config.level) threshold = levelOf(config.level)
      toConsole = config.enableConsole ?? toConsole
      toStorage = config.enableStorage ?? toStorage
      if (!toStorage) tab.remove(STORAGE_KEY)
    },
    entries: () => [...entries],
  }
}
