import type { ClientLocator, SocketServer } from '../geo/locator'
import type { Geo } from '../geo/service'
import { parseUserAgent, type ParsedUserAgent } from './user-agent'

/** What a request tells about the browser behind it, for its session and end user. */
export interface ClientFacts {
  userAgent: ParsedUserAgent | null
  geo: Geo | null
}

/**
 * The browser's User-Agent header (else the tracker's `automaticProperties.userAgent`, for a relay
 * that did not pass the header on) and where its address is.
 */
export async function clientFacts(
  request: Request,
  server: SocketServer | null | undefined,
  locator: ClientLocator,
  automaticProperties?: Record<string, unknown> | null,
): Promise<ClientFacts> {
  const reported = automaticProperties?.userAgent
  const userAgent = request.headers.get('user-agent') || (typeof reported === 'string' ? reported : null)
  const geo = await locator.geo(locator.address(request, server))
  return { userAgent: parseUserAgent(userAgent), geo }
}
