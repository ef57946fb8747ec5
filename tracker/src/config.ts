import { strings } from './guard'
import type { ConnectionStatus } from './types'

/** Where the service's ingestion routes are, under the base. */
export const API = '/api/ingestion'
/** The relay's conventional prefix: where sends go when nothing else says. */
export const DEFAULT_PREFIX = '/_sl'
/** The relay serves the tracker as `<prefix>/t.js`. */
const RELAY_SCRIPT = /^(.*)\/t\.js$/

export interface IngestionBase {
  base: string
  source: ConnectionStatus['source']
}

/**
 * Where the tracker sends. An explicit `ingestionUrl` wins; else the relay the script came from
 * (`<origin><prefix>/t.js` gives `<origin><prefix>`); else the meta tag; else the page's own origin
 * under the relay's conventional prefix, `/_sl`. Relative values resolve against the page.
 * Arguments in a row, not one object of them: the bundle keeps no names for them (about 20 B gzipped).
 */
export function resolveIngestionBase(
  /** The `ingestionUrl` option. */
  option: string | undefined,
  /** The URL the tracker's script was loaded from. */
  scriptUrl: string | null | undefined,
  /** `<meta name="sightline-ingestion-url">`'s content. */
  meta: string | null | undefined,
  pageUrl: string,
): IngestionBase {
  // Paths are added to the base: a query or fragment of it (`/_sl/?v=2`) would end up before them.
  const at = (url: string, source: IngestionBase['source']): IngestionBase => ({ base: new URL(url, pageUrl).href.replace(/\/*([?#].*)?$/, ''), source })
  // One that is no string (a number would be taken as a path) is refused, as the guard refuses arguments.
  if (option) return strings(option), at(option, 'option')
  if (scriptUrl) {
    const script = new URL(scriptUrl, pageUrl)
    const relay = RELAY_SCRIPT.exec(script.pathname)
    if (relay) return at(script.origin + relay[1], 'script')
  }
  return meta ? at(meta, 'meta') : at(DEFAULT_PREFIX, 'default')
}
