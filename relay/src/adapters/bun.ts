import type { Server } from 'bun'
import { createRelay, type RelayOptions } from '../index.ts'
import { socketClient } from '../upstream/socket.ts'

/**
 * Seconds a Bun server must let a relayed request's connection stay silent. Bun.serve closes a
 * connection silent for its `idleTimeout` (10 s by default, 30 s under Elysia's `listen`), a request
 * still waiting on core included: core silent for longer than that but within `timeoutMs` left the
 * client a closed connection instead of core's answer or the relay's 504. Bun's idle timer counts
 * in ticks of 4 s and may fire up to a tick before the seconds it was given (12 s closed one after
 * 10.4 s): 5 s more than `timeoutMs` lets the relay's own deadline come first.
 */
export const idleSeconds = (timeoutMs: number): number => Math.ceil(timeoutMs / 1000) + 5

/** The relay for `Bun.serve`: upstream connections pooled on Bun's sockets (see `upstream/socket.ts`). */
export function bunRelay(options: RelayOptions) {
  const relay = createRelay({ client: socketClient({ maxConnections: options.maxConnections, maxQueued: options.maxQueued }), ...options })
  const seconds = idleSeconds(relay.timeoutMs)
  const handle = (request: Request, server: Server<unknown>) => {
    server.timeout(request, seconds)
    return relay(request, { address: server.requestIP(request)?.address ?? null })
  }
  return Object.assign(handle, { prefix: relay.prefix, timeoutMs: relay.timeoutMs, handles: relay.handles, ready: relay.ready })
}

/** A whole server that is only the relay: `serveRelay({ upstream, prefix, port })`. */
export function serveRelay(options: RelayOptions & { port?: number; hostname?: string }) {
  const { port, hostname, ...relayOptions } = options
  const fetch = bunRelay(relayOptions)
  return Bun.serve({
    port,
    hostname,
    // The relay enforces its own limit with WIRE.md's 413; Bun's must not answer first. Bun refuses a
    // declared length over its limit before any handler runs, with a bare 413 and no body: any finite
    // limit left a body declared past it (twice maxBodyBytes, as this was) outside WIRE.md's shape.
    // The relay never buffers past maxBodyBytes: a declared body over it is refused unread, one of
    // undeclared size is counted as it streams.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    fetch,
  })
}
