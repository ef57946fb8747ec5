import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { createRelay, type RelayOptions } from '../index.ts'
import { splitUrl } from '../paths.ts'
import { socketClient } from '../upstream/socket.ts'
import { idleSeconds } from './bun.ts'

/**
 * The relay as an Elysia plugin: `app.use(elysiaRelay({ upstream, prefix }))`. It answers in
 * `onRequest`, before routing and body parsing (the relay streams bodies as they came), so that
 * `prefix` is the path the browser asks for wherever the plugin is used: Elysia puts a parent's
 * prefix or group before a plugin's routes, and routes of `${prefix}/*` used in
 * `new Elysia({ prefix: '/site' })` answered nothing at all.
 */
export function elysiaRelay(options: RelayOptions) {
  const relay = createRelay({ client: socketClient({ maxConnections: options.maxConnections, maxQueued: options.maxQueued }), ...options })
  const seconds = idleSeconds(relay.timeoutMs)
  // Without a server (`app.handle`, no socket) there is no peer to name, nor an idle timeout to lift.
  // An app compiled without aot (`new Elysia({ aot: false })`) leaves `server` out of the context
  // even when listening: the plugin then asks Elysia for it (the server of the app it is used in,
  // through groups and prefixed instances), or it appended no client address to X-Forwarded-For.
  const handle = ({ request, server, set }: { request: Request; server?: ServerLike | null; set: SiteSet }) => {
    if (!relay.handles(splitUrl(request.url).path)) return undefined
    // Elysia merges what the site's own earlier hooks put on `set` into the answer a hook returns,
    // a Set-Cookie appended to any the answer has: a site's session cookie came back on the relay's
    // answers. The relay never returns Set-Cookie, on any adapter; the site's other headers
    // (`app.headers()`, security headers) still apply as to every answer of the site, but never over
    // one the relay's answer has. A status the site set replaces the answer's: core's answer is the
    // tracker's to read (a 429, a 503 to retry), so the status is reset to Elysia's default, which
    // leaves an answer's own. Vary is the exception, a list both add to, as on Node: Elysia keeps the
    // answer's alone, and a site's CORS hook that reflects Origin (Vary: Origin) on the script cached
    // one origin's Access-Control-Allow-Origin for the next.
    const siteVary = takeSiteFields(set.headers)
    set.cookie = undefined
    set.status = 200
    const running = server ?? (plugin as unknown as { getServer(): ServerLike | null }).getServer()
    running?.timeout(request, seconds)
    const answered = relay(request, { address: running ? (running.requestIP(request)?.address ?? null) : undefined })
    return siteVary === null ? answered : answered.then((response) => withSiteVary(response, siteVary, set))
  }
  // `getServer` is Elysia's own (private in its types): the root app's server, null until it listens.
  const plugin = new Elysia({ name: 'sightline-relay', seed: relay.prefix })
  return plugin.onRequest(handle)
}

/**
 * Removes the site's Set-Cookie and Vary from `set` (however the site spelled them: `set.headers` is a
 * plain object, and Elysia passed `Set-Cookie` on as a field of its own), and returns the Vary.
 * Names are compared only when their length matches, so the usual handful of fields costs nothing.
 */
function takeSiteFields(headers: Record<string, unknown>): string | null {
  let vary: string | null = null
  for (const name in headers) {
    if (name.length === 10 && name.toLowerCase() === 'set-cookie') delete headers[name]
    else if (name.length === 4 && name.toLowerCase() === 'vary') {
      vary = vary === null ? String(headers[name]) : `${vary}, ${String(headers[name])}`
      delete headers[name]
    }
  }
  return vary
}

/** The answer listing the site's Vary before its own (Elysia adds the site's to one that has none). */
function withSiteVary(response: Response, siteVary: string, set: SiteSet): Response {
  const own = response.headers.get('vary')
  if (own === null) {
    set.headers.vary = siteVary
    return response
  }
  // A new Headers: a fetch client's answer has immutable ones.
  const headers = new Headers(response.headers)
  headers.set('vary', `${siteVary}, ${own}`)
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

type ServerLike = Pick<Server<unknown>, 'requestIP' | 'timeout'>
/** The parts of Elysia's `set` that carry a site's cookies and status into an answer. */
type SiteSet = { headers: Record<string, unknown>; cookie?: unknown; status?: number | string }
