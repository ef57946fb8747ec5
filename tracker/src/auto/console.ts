import { patch, type Undo } from '../dom'
import { LOG_PREFIX } from '../log'
import { isErrorLike, toText } from '../text'
import type { AutoContext } from '.'

/** Console messages are cut here; the server truncates at 32 KB anyway. */
export const LOG_MESSAGE_MAX_CHARS = 8192

/** `console.warn` and `console.error` become logs; the page's console still prints them. */
export function trackConsole(context: AutoContext): Undo[] {
  const console = context.win.console
  const flood = context.floodGate()
  let reporting = false
  const log = (level: string, message: string, stack?: string) => {
    if (level == 'error' && flood(message + stack)) return
    const { withPageUrls } = context
    context.report('/logs', 'logs', { level, message: withPageUrls(message), stack: stack && withPageUrls(stack), url: context.here(), timestampMs: context.now() })
  }
  return (['warn', 'error'] as const).map((level) =>
    patch(console, level, (original) =>
      function (this: Console, ...args: unknown[]) {
        // Not what a report itself logs (a failing serializer), nor the tracker's own lines.
        if (!reporting) {
          reporting = true
          try {
            if (!(typeof args[0] === 'string' && args[0].startsWith(LOG_PREFIX))) {
              log(level, args.map(toText).join(' ').slice(0, LOG_MESSAGE_MAX_CHARS), args.find(isErrorLike)?.stack)
            }
          } catch {
            // Never into the page's own console call.
          } finally {
            reporting = false
          }
        }
        return original.apply(this, args)
      },
    ),
  )
}
