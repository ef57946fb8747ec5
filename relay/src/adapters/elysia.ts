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
  const relay = createRelay({ client: socketClient(), ...options })
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
    // leaves an answer's own.
    delete set.headers['set-cookie']
    set.cookie = undefined
    set.status = 200
    const running = server ?? (plugin as unknown as { getServer(): ServerLike | null }).getServer()
    running?.timeout(request, seconds)
    return relay(request, { address: running ? (running.requestIP(request)?.address ?? null) : undefined })
  }
  // `getServer` is Elysia's own (private in its types): the root app's server, null until it listens.
  const plugin = new Elysia({ name: 'sightline-relay', seed: relay.prefix })
  return plugin.onRequest(handle)
}

type ServerLike = Pick<Server<unknown>, 'requestIP' | 'timeout'>
/** The parts of Elysia's `set` that carry a site's cookies and status into an answer. */
type SiteSet = { headers: Record<string, unknown>; cookie?: unknown; status?: number | string }
