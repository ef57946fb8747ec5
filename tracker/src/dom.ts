import type { Clock, PageWindow } from './types'

/** An element's id attribute. Not the property: in a form, `form.id` is the form's field named `id`, if it has one. */
export const idOf = (el: Element) => el.getAttribute('id') || undefined

/** The page's own clock: its timers. */
export const pageClock = (win: PageWindow): Clock => ({
  now: Date.now,
  setTimeout: (callback, ms) => win.setTimeout(callback, ms),
  clearTimeout: (handle) => win.clearTimeout(handle as number),
})

/** What undoes something the tracker did to the page: a listener added, a function wrapped. */
export type Undo = () => void

/** Adds a listener and returns what removes it. */
export function listen<E extends Event>(target: EventTarget, type: string, handler: (event: E) => void, capture = false): Undo {
  target.addEventListener(type, handler as EventListener, capture)
  return () => target.removeEventListener(type, handler as EventListener, capture)
}

/**
 * Puts `wrap(original)` in place of `owner[name]` and returns what undoes it. Undone, our wrapper
 * only calls the original: when something else has wrapped it since, ours stays in their chain (taken
 * out, theirs would be too), and must report nothing, nor twice once started again. What the page has
 * made read-only (`Object.freeze(history)`, a locked `fetch`) stays as it is, untracked: assigning it
 * throws in strict code, and would throw into the page's own `start()` or `stop()`.
 */
export function patch<T extends object, K extends keyof T>(owner: T, name: K, wrap: (original: T[K]) => T[K]): Undo {
  const original = owner[name]
  const wrapped = wrap(original)
  let enabled = true
  const installed = function (this: unknown, ...args: unknown[]) {
    return ((enabled ? wrapped : original) as Function).apply(this, args)
  } as T[K]
  const put = (value: T[K]) => {
    try {
      owner[name] = value
    } catch {}
  }
  put(installed)
  return () => {
    enabled = false
    if (owner[name] === installed) put(original)
  }
}
