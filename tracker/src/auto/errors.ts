import { listen, type Undo } from '../dom'
import type { AutoContext } from '.'

/** Uncaught errors and unhandled promise rejections, as unhandled error reports: those kept early, and from now on. */
export function trackErrors(context: AutoContext): Undo[] {
  const report = (event: Event) => {
    if (event.type == 'unhandledrejection') return context.error((event as PromiseRejectionEvent).reason, false, { mechanism: 'unhandledrejection' })
    // Errors of the code only: a resource that fails to load (img, script) fires an error that does not
    // bubble, and this listener does not capture. One with neither message nor error (dispatched by the
    // page itself) has nothing to report.
    const { message, error, filename, lineno, colno } = event as ErrorEvent
    if (message || error) context.error(error ?? { name: 'Error', message }, false, filename ? { filename: context.redaction.pageUrl(filename), lineno, colno } : undefined)
  }
  context.early.forEach(report)
  return [listen(context.win, 'error', report), listen(context.win, 'unhandledrejection', report)]
}
