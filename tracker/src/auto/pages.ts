import { listen, patch, type Undo } from '../dom'
import type { AutoContext } from '.'

/**
 * A page view now and at every change of URL (history API, back/forward, hash), and a navigation
 * event for each change. `replaceState` counts as a new page only when the path changes (apps use it
 * to rewrite query strings).
 */
export function trackPages(context: AutoContext, pageViews: boolean, navigation: boolean): Undo[] {
  const { history, location } = context.win
  let current = location.href
  const changed = (type: 'push' | 'replace' | 'pop') => {
    const to = location.href
    if (to === current) return
    const from = current
    current = to
    if (navigation) context.navigation(type, from, to)
    if (pageViews && (type !== 'replace' || new URL(from).pathname !== location.pathname)) context.pageView(to)
  }
  const wrapHistory = (type: 'push' | 'replace') =>
    patch(history, `${type}State`, (original) =>
      function (this: History, ...args: Parameters<History['pushState']>) {
        const result = original.apply(this, args)
        changed(type)
        return result
      },
    )
  if (pageViews) context.pageView()
  return [
    wrapHistory('push'),
    wrapHistory('replace'),
    listen(context.win, 'popstate', () => changed('pop')),
    listen(context.win, 'hashchange', () => changed('pop')),
  ]
}
