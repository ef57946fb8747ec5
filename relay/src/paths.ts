/**
 * Which paths the relay forwards. Only what core serves publicly, spelled plainly.
 *
 * The path matched is the one the URL parser leaves (WHATWG URL, as every runtime builds
 * `request.url`, and the Node adapter parses its raw target the same way): dot segments, their
 * percent-encoded forms and backslashes are already resolved, as a browser resolves them before it
 * sends, so `/_sl/api/ingestion/../../health` arrives as `/_sl/health`. What the parser keeps is then
 * refused unless it is a public path letter for letter: any remaining percent-encoding (`%2F`,
 * `%63`), empty segments, `;` or other characters. Core is sent that path and nothing else, at the
 * upstream origin from configuration, never one from the request.
 */

const INGESTION = /^\/api\/ingestion(?:\/[A-Za-z0-9_-]+)+$/
const HEALTH = new Set(['/health', '/health/simple'])

export const isForwardedPath = (path: string): boolean => HEALTH.has(path) || INGESTION.test(path)

/** What core answers to these methods on its public paths; anything else is refused by the relay (405, with `allowOn`). */
export const FORWARDED_METHODS = new Set(['GET', 'HEAD', 'POST', 'OPTIONS'])

/**
 * The methods core serves on a public path, as its own 405 lists them (RFC 9110 §15.5.6: `Allow` is
 * the target's methods): the health probes `GET, HEAD, OPTIONS`, ingestion `POST, OPTIONS`. Not every
 * method the relay forwards: POST on /health is core's 405, and a client told otherwise tries it.
 */
export const allowOn = (path: string): string => (HEALTH.has(path) ? 'GET, HEAD, OPTIONS' : 'POST, OPTIONS')

/** A prefix as configured ("_sl", "/_sl/") in the one form the matcher uses ("/_sl"). */
export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.trim().replace(/^\/+|\/+$/g, '')
  if (trimmed === '') return ''
  if (!/^[A-Za-z0-9._~!$&'()*+,;=:@/-]+$/.test(trimmed) || trimmed.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new TypeError(`relay prefix "${prefix}" is not a plain path`)
  }
  return `/${trimmed}`
}

export interface SplitUrl {
  /** The path after the scheme and authority, e.g. "/_sl/health". */
  path: string
  /** "?..." or "". */
  search: string
  /** "http" or "https". */
  proto: string
  /** The authority ("shop.test:8080"), for requests that carry no Host header. */
  host: string
}

/**
 * Splits a request URL without allocating a URL object (this runs on every request). Request URLs
 * handed to a server handler are absolute ("http://host/path?query").
 */
export function splitUrl(url: string): SplitUrl {
  const schemeEnd = url.indexOf('://')
  const proto = schemeEnd === -1 ? 'http' : url.slice(0, schemeEnd).toLowerCase()
  const authorityStart = schemeEnd === -1 ? 0 : schemeEnd + 3
  let pathStart = url.indexOf('/', authorityStart)
  const queryStart = url.indexOf('?', authorityStart)
  if (pathStart === -1 || (queryStart !== -1 && queryStart < pathStart)) pathStart = queryStart === -1 ? url.length : queryStart
  const hashStart = url.indexOf('#', pathStart)
  const end = hashStart === -1 ? url.length : hashStart
  const pathEnd = queryStart === -1 || queryStart > end ? end : queryStart
  return { path: url.slice(pathStart, pathEnd) || '/', search: url.slice(pathEnd, end), proto, host: url.slice(authorityStart, pathStart) }
}

/** The path under `prefix` ("/_sl/health" -> "/health"), or null when the path is not under it. */
export function underPrefix(path: string, prefix: string): string | null {
  if (prefix === '') return path
  if (!path.startsWith(prefix)) return null
  const rest = path.slice(prefix.length)
  return rest.startsWith('/') ? rest : rest === '' ? '/' : null
}

/**
 * The methods a Web Request cannot carry (Fetch standard, "forbidden method"; CONNECT never reaches
 * a request listener). A server that parses its own requests (node:http, the standalone server)
 * meets them, and `new Request` throws on them (undici's did in the listener, and one
 * `TRACE /_sl/health` took the whole Node process down): the relay refuses them by path, unmade.
 */
export const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK'])

/** A Host that would change the path (`/`, `?`, `#`, `\`), or with user info (RFC 9110 §4.2.4). */
export const UNSAFE_HOST = /[/?#\\@]/

/**
 * The request target as a URL, as Bun and Deno hand theirs to a handler, for a server that parses
 * its own requests: the path as it came, on the connection's scheme and the Host the client sent.
 * The origin form is a path, `//x/y` included (as a relative reference it would be a scheme-relative
 * URL, its first segment taken for a host); of the absolute form only the path counts, its scheme
 * and authority being the client's claim, not the connection's (they would set X-Forwarded-Proto).
 * A Host that would change the path, or user info in either (undici's `new Request` throws on it),
 * is refused: null.
 */
export function targetUrl(proto: string, host: string, target: string): URL | null {
  if (UNSAFE_HOST.test(host)) return null
  const path = target.startsWith('/') ? target : pathOf(target)
  // Without a Host the URL needs one all the same; the caller says there was none.
  return path === null ? null : parseUrl(`${proto}://${host || 'localhost'}${path}`)
}

/** `URL.parse`, which Node has only from 20.18. */
function parseUrl(text: string): URL | null {
  try {
    return new URL(text)
  } catch {
    return null
  }
}

/** The path and query of an absolute-form target (`OPTIONS *` and the like as a path); null with user info. */
function pathOf(target: string): string | null {
  const url = parseUrl(target)
  if (!url) return `/${target}`
  return url.username || url.password ? null : url.pathname + url.search
}
