import { Elysia } from 'elysia'
import { unserved } from './errors'
import { pathOf, type RouteTable } from './routes'

const ALLOWED_METHODS = 'POST, GET, OPTIONS'
const ALLOWED_HEADERS = 'Authorization, Content-Type, Content-Encoding'
/** Cross-origin callers may read these: back-off (`Retry-After`), and that `/init` is deprecated. */
const EXPOSED_HEADERS = 'Retry-After, Deprecation'

/** The public paths: ingestion and the health probes. The dashboard API is same-origin only. */
export const isPublicPath = (path: string) => path.startsWith('/api/ingestion/') || path === '/' || path.startsWith('/health')

/**
 * CORS as WIRE.md says: the request's Origin is reflected (no credentials are ever allowed, so this
 * grants nothing a page could not already do), and every path whose methods include OPTIONS (the
 * public ones) answers preflight with 204; other known paths 405, the rest 404, as any other method.
 * Preflight is a route like any other, so it is logged like any other.
 */
export function cors(routes: () => RouteTable) {
  return new Elysia({ name: 'http/cors' })
    .onRequest(({ request, set }) => {
      if (request.method === 'OPTIONS') return
      const path = pathOf(request.url)
      if (!isPublicPath(path)) return
      set.headers.vary = 'Origin'
      const origin = request.headers.get('origin')
      if (origin) {
        set.headers['access-control-allow-origin'] = origin
        set.headers['access-control-expose-headers'] = EXPOSED_HEADERS
      }
    })
    .options('/*', ({ request, set }) => {
      // Not Elysia's `path`, which it finds after a scheme and host: a request without a Host has none.
      const path = pathOf(request.url)
      if (!routes().get(path)?.includes('OPTIONS')) throw unserved('OPTIONS', path, routes())
      set.status = 204
      Object.assign(set.headers, {
        'access-control-allow-origin': request.headers.get('origin') ?? '*',
        'access-control-allow-methods': ALLOWED_METHODS,
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': '86400',
        vary: 'Origin',
      })
      return null
    })
}
