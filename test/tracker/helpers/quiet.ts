import { createLogger } from '@sightline/tracker/log'
import { webStorage } from '@sightline/tracker/storage'

/** A tracker logger that keeps its entries and prints nothing. */
export const quietLog = () => {
  const log = createLogger('debug', webStorage(() => null), console, () => 0)
  log.configure({ enableConsole: false })
  return log
}
