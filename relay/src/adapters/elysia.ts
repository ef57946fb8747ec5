import { Elysia } from 'elysia'
import { createRelay, type RelayOptions } from '../index.ts'
import { socketClient } from '../upstream/socket.ts'

/**
 * The relay as an Elysia plugin: `app.use(elysiaRelay({ upstream, prefix }))`. Bodies are not
 * parsed (`parse: 'none'`): the relay streams them as they came.
 */
export function elysiaRelay(options: RelayOptions) {
  const relay = createRelay({ client: socketClient(), ...options })
  // Without a server (`app.handle`, no socket) there is no peer to name.
  const handle = ({ request, server }: { request: Request; server: { requestIP(r: Request): { address: string } | null } | null }) =>
    relay(request, { address: server ? (server.requestIP(request)?.address ?? null) : undefined })
  return new Elysia({ name: 'sightline-relay', seed: relay.prefix })
    .all(`${relay.prefix}/*`, handle, { parse: 'none' })
    .all(relay.prefix || '/', handle, { parse: 'none' })
}
