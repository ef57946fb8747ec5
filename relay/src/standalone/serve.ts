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
  const forwarding: Forwarding = { settings, client, relay }
  // Silence allowed on a connection, whatever it waits for: core's answer gets its `timeoutMs` (then
  // the relay answers 504) and a little more, as the Bun adapter allows.
  const seconds = idleSeconds(settings.timeoutMs)
  const connections = new Set<ClientConnection>()
  // Silence is counted in whole seconds by one sweep a second, rather than by Bun's socket timeout,
  // which runs from when it is set whatever comes after: kept, it closed connections in steady use
  // at their 35th second, and set again on every read and drain it is a call into the runtime each time.
  const clock = { seconds: 0 }
  const sweep = setInterval(() => {
    clock.seconds++
    for (const conn of connections) if (clock.seconds - conn.heardAt > seconds) conn.socket.terminate()
  }, 1000)
  sweep.unref()
  let closedWaiters: (() => void)[] = []
  let stopped = false

  const listener = Bun.listen<ClientConnection>({
    hostname,
    port,
    socket: {
      open(socket) {
        socket.data = opened(socket, forwarding)
        socket.data.heardAt = clock.seconds
        socket.setNoDelay(true)
        connections.add(socket.data)
      },
      data(socket, data) {
        socket.data.heardAt = clock.seconds
        onData(socket.data, data)
      },
      drain(socket) {
        socket.data.heardAt = clock.seconds
        onDrain(socket)
      },
      close(socket) {
        onClosed(socket.data)
        connections.delete(socket.data)
        if (connections.size > 0) return
        if (stopped) clearInterval(sweep)
        for (const wake of closedWaiters) wake()
        closedWaiters = []
      },
      error(socket) {
        socket.terminate()
      },
    },
  })

  return {
    url: new URL(`http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${listener.port}`),
    port: listener.port,
    stop(force = false) {
      listener.stop(force)
      stopped = true
      if (force) for (const conn of connections) conn.socket.terminate()
      else for (const conn of connections) stopAfterAnswer(conn)
      if (connections.size > 0) return new Promise<void>((resolve) => closedWaiters.push(resolve))
      clearInterval(sweep)
      return Promise.resolve()
    },
  }
}

function stopAfterAnswer(conn: ClientConnection): void {
  conn.stopping = true
  if (conn.request) return
  conn.ending = true
  conn.socket.end()
}
