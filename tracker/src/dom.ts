/** An element's id attribute. Not the property: in a form, `form.id` is the form's field named `id`, if it has one. */
export const idOf = (el: Element) => el.getAttribute('id') || undefined

/** Adds a listener and returns what removes it. */
export function listen<E extends Event>(target: EventTarget, type: string, handler: (event: E) => void, capture = false): () => void {
  const listener = handler as EventListener
  target.addEventListener(type, listener, capture)
  return () => target.removeEventListener(type, listener, capture)
}

/**
 * Replaces `owner[name]` with `wrap(original)` and returns what restores it, unless something else
 * has wrapped it since (then ours stays, harmless, rather than cutting the other one out).
 */
export function patch<T extends object, K extends keyof T>(owner: T, name: K, wrap: (original: T[K]) => T[K]): () => void {
  const original = owner[name]
  const wrapped = wrap(original)
  owner[name] = wrapped
  return () => {
    if (owner[name] === wrapped) owner[name] = original
  }
}
