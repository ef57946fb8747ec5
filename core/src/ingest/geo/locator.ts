import { clientAddress } from '../../http/client-ip'
import type { Logger } from '../../log'
import { geoDatabasePaths, openGeoDatabase, type GeoDatabase } from './reader'
import type { Geo } from './service'

/** What Elysia hands a route as `server` (null when a request is handled without a socket). */
export interface SocketServer {
  requestIP(request: Request): { address: string } | null
}

/** Where addresses are: read by the GeoIP worker (worker-client.ts), or on this thread (`onThisThread`). */
export interface GeoLookup {
  /** Null for private, loopback, invalid and unknown addresses. */
  lookup(address: string | null | undefined): Promise<Geo | null>
}

/** Who sent a request and where they are; shared by every route that records sessions. */
export interface ClientLocator {
  /** The client's address: the socket's, or `X-Forwarded-For` behind `TRUSTED_PROXIES`. */
  address(request: Request, server: SocketServer | null | undefined): string | null
  /** Where an address is; null for private, loopback, invalid and unknown addresses. */
  geo(address: string | null | undefined): Promise<Geo | null>
}

/**
 * `geo` as core's start makes it (main.ts), on the GeoIP worker; without it (an app composed in one
 * thread, as the tests do), the database is opened and read on this thread.
 */
export function createClientLocator(options: { trustedProxies: readonly string[]; geoipDb?: string; log?: Logger }, geo?: GeoLookup): ClientLocator {
  const resolve = clientAddress(options.trustedProxies)
  const database = geo ?? onThisThread(openGeoDatabase(geoDatabasePaths(options.geoipDb), options.log))
  return {
    address: (request, server) => resolve(server?.requestIP(request)?.address, request.headers.get('x-forwarded-for')),
    geo: (address) => database.lookup(address),
  }
}

export const onThisThread = (database: GeoDatabase): GeoLookup => ({ lookup: async (address) => database.lookup(address) })
