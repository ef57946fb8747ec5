import { listen, type Undo } from '../dom'
import type { AutoContext } from '.'

/** Uncaught errors and unhandled promise rejections, as unhandled error reports. */
export function trackErrors(context: AutoContext): Undo[] {
  return [
    listen<ErrorEvent>(context.win, 'error', (event) => {
      // Errors of the code only: a resource that fails to load (img, script) fires an error that does not
      // bubble, and this listener does not capture. One with neither message nor error (dispatched by the
      // page itself) has nothing to report.
      if (!event.message && !event.error) return
      context.error(event.error ?? { name: 'Error', message: event.message }, false, event.filename ? { filename: context.redaction.pageUrl(event.filename), lineno: event.lineno, colno: event.colno } : undefined)
    }),
    listen<PromiseRejectionEvent>(context.win, 'unhandledrejection', (event) => context.error(event.reason, false, { mechanism: 'unhandledrejection' })),
  ]
}
