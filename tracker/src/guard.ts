/**
 * Makes each public method of `tracker` its own, bound to it: it works detached too (`const {
 * customEvent } = tracker`, `then(tracker.identifyUser)`), as a page may call it. And none throws into
 * the page: what a wrong-typed or malformed argument makes fail (an unparseable URL, selectors that
 * are no list, a number for a name) is refused with a warning, and nothing else happens. (The two
 * that return a promise, identifyUser and testConnection, check what they are given and catch what
 * they call.)
 */
export function guardMethods(tracker: object, prototype: object, warn: (message: string) => void) {
  const methods = tracker as Record<string, (...args: unknown[]) => unknown>
  for (const name of Object.getOwnPropertyNames(prototype)) {
    const method = methods[name]
    if (name != 'constructor') {
      methods[name] = (...args) => {
        try {
          return method.apply(methods, args)
        } catch (error) {
          warn(name + ': ' + error + '; ignored')
        }
      }
    }
  }
}

/** A public method's argument of the wrong type: thrown for the guard to refuse. */
export const strings = (...values: unknown[]) => {
  if (values.some((value) => typeof value != 'string')) throw TypeError('not a string')
}
