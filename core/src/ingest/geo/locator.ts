import { clientAddress } from '../../http/client-ip'
import type { Logger } from '../../log'
import { geoDatabasePaths, openGeoDatabase, type GeoLookup } from './reader'
import type { Geo } from './service'

/** What Elysia hands a route as `server` (null when a request is handled without a socket). */
export interface SocketServer {
  requestIP(request: Request): { address: string } | null
}

/** Who sent a request and where they are; shared by every route that records sessions. */
export interface ClientLocator {
  /** The client's address: the socket's, or `X-Forwarded-For` behind `TRUSTED_PROXIES`. */
  address(request: Request, server: SocketServer | null | undefined): string | null
  /** Where an address is; null for private, loopback, invalid and unknown addresses. */
  geo(address: string | null | undefined): Geo | null
}

export function createClientLocator(options: { trustedProxies: readonly string[]; geoipDb?: string; log?: Logger }, geo?: GeoLookup): ClientLocator {
  const resolve = clientAddress(options.trustedProxies)
  const database = geo ?? openGeoDatabase(geoDatabasePaths(options.geoipDb), options.log)
  return {
    address: (request, server) => resolve(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for')),
    geo: (address) => database.lookup(address),
  }
}
