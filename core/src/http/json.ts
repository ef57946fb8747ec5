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
  const tooDeep = (...at: (string | number)[]) =>
    new ApiError('validation_failed', `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, { path: at.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('') })
  // The body is level 1, its members level 2, a list member's items level 3.
  const members = childrenOf(value)
  for (let m = 0; m < members.keys.length; m++) {
    const member = members.at(m)
    if (!Array.isArray(member)) {
      if (nestsPast(member, 2)) throw tooDeep(members.keys[m])
    } else {
      for (let i = 0; i < member.length; i++) if (nestsPast(member[i], 3)) throw tooDeep(members.keys[m], i)
    }
  }
  return value
}

/** A node's children, by key or index. Only what JSON makes: a route's own reader may put class instances (typed arrays) in the body. */
function childrenOf(node: object): { keys: (string | number)[]; at(i: number): unknown } {
  if (Array.isArray(node)) return { keys: node.map((_, i) => i), at: (i) => node[i] }
  const keys = Object.getPrototypeOf(node) === Object.prototype ? Object.keys(node) : []
  return { keys, at: (i) => (node as Record<string, unknown>)[keys[i]] }
}

/** Whether `root`, at level `depth` of the body, holds an array or object past MAX_JSON_DEPTH. */
function nestsPast(root: unknown, depth: number): boolean {
  if (root === null || typeof root !== 'object') return false
  const values: object[] = [root]
  const depths: number[] = [depth]
  while (values.length > 0) {
    const node = values.pop()!
    const level = depths.pop()!
    const children = Array.isArray(node) ? node : Object.getPrototypeOf(node) === Object.prototype ? Object.values(node) : []
    for (const child of children) {
      if (child === null || typeof child !== 'object') continue
      if (level >= MAX_JSON_DEPTH) return true
      values.push(child)
      depths.push(level + 1)
    }
  }
  return false
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
