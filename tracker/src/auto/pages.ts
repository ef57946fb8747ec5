import { listen, patch, type Undo } from '../dom'
import type { AutoContext } from '.'

/**
 * A page view now and at every change of URL (history API, back/forward, hash, the Navigation API),
 * and a navigation event for each change. `replaceState` counts as a new page only when the path
 * changes (apps use it to rewrite query strings).
 */
export function trackPages(context: AutoContext, pageViews: boolean, navigation: boolean): Undo[] {
  const { win } = context
  const { history, location } = win
  let current = location.href
  const changed = (type: string) => {
    const from = current
    if ((current = location.href) == from) return
    if (navigation) context.navigation(type, from, current)
    if (pageViews && (type != 'replace' || new URL(from).pathname != location.pathname)) context.pageView(current)
  }
  const wrapHistory = (type: string) =>
    patch(history, `${type as 'push' | 'replace'}State`, (original) =>
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
    listen(win, 'popstate', () => changed('pop')),
    listen(win, 'hashchange', () => changed('pop')),
    // A router on the Navigation API (`navigation.navigate()`, a link's navigation intercepted) changes
    // the URL through neither history's methods nor an event above. Where the API is, it tells of every
    // change first, within the change (a back or forward is left to popstate, which names it `pop`); where
    // it is not, the window, which never hears of it, is listened to: the same code, and nothing heard.
    listen<Event & { navigationType: string }>((win as { navigation?: EventTarget }).navigation ?? win, 'currententrychange', ({ navigationType: type }) => type != 'traverse' && changed(type)),
  ]
}
