import { patch, type Undo } from '../dom'
import { LOG_PREFIX } from '../log'
import { isErrorLike, toText } from '../text'
import type { AutoContext } from '.'

/** Console messages are cut here; the server truncates at 32 KB anyway. */
export const LOG_MESSAGE_MAX_CHARS = 8192

/**
 * The line as the console shows it: a format string's specifiers take the arguments after it (`%c`
 * its CSS, shown as nothing; `%d` and `%i` as parseInt reads them, `%f` as parseFloat does; `%s`, `%o`
 * and `%O` as text; a specifier with none left stays), and the rest are appended. Sent raw, a banner's
 * CSS would be stored, and one warning would read differently with each substitution.
 */
function consoleLine(args: unknown[]): string {
  const [first, ...rest] = args
  // Left to right: the substitutions take their arguments before the rest are appended.
  const line =
    typeof first == 'string'
      ? [
          first.replace(/%([%cdifoOs])/g, (found, kind) =>
            kind == '%' ? kind : rest.length ? ((found = toText(rest.shift())), kind == 'c' ? '' : kind == 'f' ? '' + parseFloat(found) : kind == 'd' || kind == 'i' ? '' + parseInt(found) : found) : found,
          ),
          ...rest,
        ]
      : args
  return line.map(toText).join(' ')
}

/** `console.warn` and `console.error` become logs; the page's console still prints them. */
export function trackConsole(context: AutoContext): Undo[] {
  const console = context.win.console
  const flood = context.floodGate()
  let reporting = false
  return (['warn', 'error'] as const).map((level) =>
    patch(console, level, (original) =>
      function (this: Console, ...args: unknown[]) {
        // Not what a report itself logs (a failing serializer), nor the tracker's own lines.
        if (!reporting) {
          reporting = true
          try {
            if (!(typeof args[0] === 'string' && args[0].startsWith(LOG_PREFIX))) {
              const message = consoleLine(args).slice(0, LOG_MESSAGE_MAX_CHARS)
              const stack = args.find(isErrorLike)?.stack
              if (level != 'error' || !flood(message + stack)) {
                context.report('/logs', 'logs', { level, message: context.withPageUrls(message), stack: stack && context.withPageUrls(stack), url: context.here(), timestampMs: context.now() })
              }
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
