import type { ConnectionStatus } from './types'

/**
 * Said in the log at the first write localStorage refuses, and in `getConnectionStatus()` from then on:
 * the tracker goes on in memory (see `webStorage`).
 */
export const STORAGE_REFUSED = 'localStorage is disabled or full: unsent data is kept in memory, for this page only'

/** Requests through the relay stay on the page's own origin, where blocklists do not look. */
const THROUGH_RELAY = 'load the tracker through the relay (<prefix>/t.js)'

/**
 * What the page can tell about its sends, and what to do about it: `getConnectionStatus()`. `pageUrl`,
 * the page's own URL: a base on another origin is not first-party; `storageRefused`: localStorage
 * refused a write.
 */
export function connectionStatus(status: Omit<ConnectionStatus, 'transport' | 'recommendations'>, pageUrl: string, storageRefused: boolean): ConnectionStatus {
  const { ingestionUrl, blocked, reachable, online, stopped } = status
  const firstParty = new URL(ingestionUrl).origin === new URL(pageUrl).origin
  const recommendations = [
    // First-party already (the relay, same origin: no preflight), the block is in front of it.
    blocked && 'Fetch is blocked: ' + (firstParty ? 'let the Authorization header through the proxy or CDN in front (beacons meanwhile)' : THROUGH_RELAY),
    online && !reachable && `No answer from ${ingestionUrl}: the service is down, or blocked` + (firstParty ? '' : '; ' + THROUGH_RELAY),
    !online && 'Offline: data is kept until back online',
    stopped === 'monthly_limit' && 'Monthly limit reached: raise the project limit',
    stopped === 'invalid_key' && 'API key refused: use a current key',
    storageRefused && STORAGE_REFUSED,
  ].filter((advice): advice is string => !!advice)
  return { ...status, transport: blocked ? 'beacon' : 'fetch', recommendations }
}
