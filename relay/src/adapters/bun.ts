import type { Server } from 'bun'
import { createRelay, DEFAULT_MAX_BODY_BYTES, type RelayOptions } from '../index.ts'
import { socketClient } from '../upstream/socket.ts'

/** The relay for `Bun.serve`: upstream connections pooled on Bun's sockets (see `upstream/socket.ts`). */
export function bunRelay(options: RelayOptions) {
  const relay = createRelay({ client: socketClient(), ...options })
  const handle = (request: Request, server: Server<unknown>) => relay(request, { address: server.requestIP(request)?.address ?? null })
  return Object.assign(handle, { prefix: relay.prefix, handles: relay.handles, ready: relay.ready })
}

/** A whole server that is only the relay: `serveRelay({ upstream, prefix, port })`. */
export function serveRelay(options: RelayOptions & { port?: number; hostname?: string }) {
  const { port, hostname, ...relayOptions } = options
  const fetch = bunRelay(relayOptions)
  return Bun.serve({
    port,
    hostname,
    // The relay enforces its own limit with WIRE.md's 413; Bun's must not answer first.
    maxRequestBodySize: 2 * (relayOptions.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES),
    fetch,
  })
}
