import type { Socket } from 'bun'
import { idleSeconds } from '../adapters/bun.ts'
import { createRelay, relaySettings, type RelayOptions } from '../index.ts'
import { socketClient } from '../upstream/socket.ts'
import { onClosed, onData, opened } from './connection.ts'
import type { Forwarding } from './forward.ts'
import { onDrain } from './output.ts'
import type { ClientConnection } from './state.ts'

/**
 * The standalone relay (`npm run relay`): an HTTP/1.1 server of its own on a TCP listener, in front
 * of the relay. A Web server (Bun.serve) makes a Request and a Response for every request, and those
 * were most of what the relay cost: this one reads the tracker's requests off the socket and writes
 * core's answers back as bytes (forward.ts), and hands everything else to the relay as a Request
 * (web.ts), so the rules are the relay's either way. Operators mounting the relay in their own server
 * use `createRelay` and the adapters; this is only for the relay as a process of its own.
 */

export interface StandaloneOptions extends RelayOptions {
  port?: number
  hostname?: string
}

export interface StandaloneServer {
  url: URL
  port: number
  /**
   * No new connections; idle ones close now, busy ones after the answer in progress. Settles once
   * all are closed. With `force`, every connection is cut at once.
   */
  stop(force?: boolean): Promise<void>
}

export function serveStandalone(options: StandaloneOptions): StandaloneServer {
  const { port = 0, hostname = '0.0.0.0', ...relayOptions } = options
  const client = socketClient({ maxConnections: relayOptions.maxConnections, maxQueued: relayOptions.maxQueued })
  const relay = createRelay({ ...relayOptions, client })
  const settings = relaySettings(relayOptions)
  const forwarding: Forwarding = { settings, client, relay, scriptPath: relayOptions.script ? `/${relayOptions.script.name ?? 't.js'}` : null }
  // Silence allowed on a connection, whatever it waits for: core's answer gets its `timeoutMs` (then
  // the relay answers 504) and a little more, as the Bun adapter allows.
  const seconds = idleSeconds(settings.timeoutMs)
  const connections = new Set<ClientConnection>()
  let closedWaiters: (() => void)[] = []

  const listener = Bun.listen<ClientConnection>({
    hostname,
    port,
    socket: {
      open(socket) {
        socket.data = opened(socket, forwarding)
        socket.setNoDelay(true)
        socket.timeout(seconds)
        connections.add(socket.data)
      },
      // Bun's socket timeout runs from when it is set, whatever comes after: set again on every
      // read and every drain, it is the connection's silence that counts, not its age.
      data(socket, data) {
        socket.timeout(seconds)
        onData(socket.data, data)
      },
      drain(socket) {
        socket.timeout(seconds)
        onDrain(socket)
      },
      close(socket) {
        onClosed(socket.data)
        connections.delete(socket.data)
        if (connections.size > 0) return
        for (const wake of closedWaiters) wake()
        closedWaiters = []
      },
      error(socket) {
        socket.terminate()
      },
      timeout(socket: Socket<ClientConnection>) {
        socket.terminate()
      },
    },
  })

  return {
    url: new URL(`http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${listener.port}`),
    port: listener.port,
    stop(force = false) {
      listener.stop(force)
      if (force) for (const conn of connections) conn.socket.terminate()
      else for (const conn of connections) stopAfterAnswer(conn)
      if (connections.size === 0) return Promise.resolve()
      return new Promise<void>((resolve) => closedWaiters.push(resolve))
    },
  }
}

function stopAfterAnswer(conn: ClientConnection): void {
  conn.stopping = true
  if (conn.request) return
  conn.ending = true
  conn.socket.end()
}
