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
  const handle = ({ request, server }: { request: Request; server: Pick<Server<unknown>, 'requestIP' | 'timeout'> | null }) => {
    if (!relay.handles(splitUrl(request.url).path)) return undefined
    server?.timeout(request, seconds)
    return relay(request, { address: server ? (server.requestIP(request)?.address ?? null) : undefined })
  }
  return new Elysia({ name: 'sightline-relay', seed: relay.prefix }).onRequest(handle)
}
