import { ApiError } from '../errors'

// JSON bodies parsed, for the body parser and for routes that read their body themselves: plain
// functions, no Elysia, so that services may use them.

/** The body as JSON: 400 when it is empty, not JSON, or nested deeper than MAX_JSON_DEPTH. */
export function parseJson(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) throw new ApiError('invalid_json', 'the body is empty; send a JSON object')
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    throw new ApiError('invalid_json', 'the body is not valid JSON')
  }
  return jsonBody(value, bytes.byteLength)
}

/**
 * Deeper than any real payload, and far from where the database's JSON parser runs out of stack:
 * Postgres refuses a jsonb value some thousands of levels deep, and the embedded one fails worse
 * (an internal error), which would fail every request of the commit with it, not only this one.
 */
export const MAX_JSON_DEPTH = 512

/**
 * The parsed body, unless it nests arrays and objects deeper than MAX_JSON_DEPTH (400). The error's
 * path names the body's member that nests too deep, and its item when that member is a list
 * (`/events/3`), as a schema's error names an invalid item: a client can send the others without it.
 */
export function shallowEnough<T>(value: T, sizeBytes = Infinity): T {
  // Each level takes a byte: small bodies, the common case, are not walked. Nor is a body that is
  // not an object or array (`null` has no prototype to look at): its route's validation refuses it.
  if (sizeBytes <= MAX_JSON_DEPTH || value === null || typeof value !== 'object') return value
  const values: unknown[] = [value]
  const depths: number[] = [1]
  /** Each value's member of the body, and item of it (see above), as a JSON Pointer. */
  const paths: string[] = ['']
  while (values.length > 0) {
    const node = values.pop()
    const depth = depths.pop()!
    const path = paths.pop()!
    // Only what JSON makes: a route's own reader may put class instances (typed arrays) in the body.
    const list = Array.isArray(node)
    const keys = list ? null : Object.getPrototypeOf(node) === Object.prototype ? Object.keys(node as object) : []
    const count = keys ? keys.length : (node as unknown[]).length
    for (let i = 0; i < count; i++) {
      const key = keys ? keys[i] : i
      const child = (node as Record<string | number, unknown>)[key]
      if (child === null || typeof child !== 'object') continue
      const childPath = depth === 1 || (depth === 2 && list) ? `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}` : path
      if (depth >= MAX_JSON_DEPTH) throw new ApiError('validation_failed', `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, { path: childPath || '/' })
      values.push(child)
      depths.push(depth + 1)
      paths.push(childPath)
    }
  }
  return value
}

/**
 * The body without its own members named like those every object inherits (`constructor`,
 * `toString`, `__proto__`, ...). No route reads such a field, so it is an unknown field, to be
 * ignored (WIRE.md); but TypeBox's Clean, which drops unknown fields before Elysia validates a body,
 * asks `name in properties`, finds these names inherited there and keeps them, and the route then
 * refuses the body for a field it does not declare. Only the top level: nested objects allow
 * fields they do not declare, and only the body's own object is closed by Elysia.
 */
function withoutInheritedNames<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value
  // Object.keys rather than for...in: a fifth of the time, on every request.
  for (const name of Object.keys(value)) if (name in Object.prototype) delete (value as Record<string, unknown>)[name]
  return value
}

/** A parsed JSON body as the routes are given it: not too deep (shallowEnough), no inherited names at its top (withoutInheritedNames). */
export const jsonBody = <T>(value: T, sizeBytes = Infinity): T => withoutInheritedNames(shallowEnough(value, sizeBytes))
