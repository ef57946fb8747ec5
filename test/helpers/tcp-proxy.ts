import type { Socket } from 'bun'

/**
 * A TCP pass-through between core and Postgres that a test can cut: `stop()` drops every open
 * connection and stops listening, so new ones are refused: what core sees when its database server
 * stops. `resume()` listens again on the same port. `freeze()` keeps every connection open and takes
 * new ones, but passes nothing more either way: a database host that stopped answering (a partition).
 */
export interface TcpProxy {
  port: number
  stop(): void
  resume(): void
  freeze(): void
  /**
   * Takes new connections and closes each once the client spoke, without a word: a proxy, or a
   * container's published port, in front of a Postgres that is down. `resume()` forwards them again.
   */
  hangUp(): void
  close(): void
}

/** One direction's socket, with what it could not write yet (Bun writes partially under backpressure). */
interface End {
  peer?: Socket<End>
  /** Bytes waiting to be written to this socket. */
  backlog: Uint8Array[]
  /** Bytes this socket sent before its peer was connected. */
  early: Uint8Array[]
}

function send(socket: Socket<End> | undefined, data: Uint8Array, queue: Uint8Array[]): void {
  if (!socket || queue.length > 0) {
    queue.push(new Uint8Array(data))
    return
  }
  const written = socket.write(data)
  if (written < data.byteLength) queue.push(new Uint8Array(data.subarray(Math.max(written, 0))))
}

function drain(socket: Socket<End>): void {
  const queue = socket.data.backlog
  while (queue.length > 0) {
    const chunk = queue[0]
    const written = socket.write(chunk)
    if (written < chunk.byteLength) {
      queue[0] = chunk.subarray(Math.max(written, 0))
      return
    }
    queue.shift()
  }
}

export interface TcpProxyOptions {
  /** Sees every chunk a client sends, in order, before it is passed on. */
  onClientData?: (chunk: Uint8Array) => void
}

export function startTcpProxy(target: { host: string; port: number }, { onClientData }: TcpProxyOptions = {}): TcpProxy {
  const open = new Set<Socket<End>>()
  let frozen = false
  let hangingUp = false
  const listen = (port: number) =>
    Bun.listen<End>({
      hostname: '127.0.0.1',
      port,
      socket: handlers,
    })

  const handlers: Parameters<typeof Bun.listen<End>>[0]['socket'] = {
      async open(client) {
        client.data = { backlog: [], early: [] }
        open.add(client)
        if (frozen || hangingUp) return
        try {
          const upstream = await Bun.connect<End>({
            hostname: target.host,
            port: target.port,
            socket: {
              open(socket) {
                socket.data = { peer: client, backlog: [], early: [] }
              },
              data(socket, data) {
                if (!frozen) send(client, data, client.data.backlog)
              },
              drain,
              close() {
                client.end()
              },
              error() {
                client.end()
              },
            },
          })
          open.add(upstream)
          client.data.peer = upstream
          // What the client sent before the upstream connection was up.
          for (const chunk of client.data.early.splice(0)) send(upstream, chunk, upstream.data.backlog)
        } catch {
          client.end()
        }
      },
      data(client, data) {
        if (hangingUp && !client.data.peer) return void client.end()
        if (frozen) return
        onClientData?.(data)
        const upstream = client.data.peer
        if (upstream) send(upstream, data, upstream.data.backlog)
        else client.data.early.push(new Uint8Array(data))
      },
      drain,
      close(client) {
        open.delete(client)
        client.data.peer?.end()
      },
      error(client) {
        client.end()
      },
  }

  let server: ReturnType<typeof listen> | undefined = listen(0)
  const port = server.port
  return {
    port,
    stop() {
      server?.stop(true)
      server = undefined
      for (const socket of open) socket.terminate()
      open.clear()
    },
    resume() {
      hangingUp = false
      server ??= listen(port)
    },
    freeze() {
      frozen = true
    },
    hangUp() {
      hangingUp = true
      for (const socket of open) socket.end()
    },
    close() {
      this.stop()
    },
  }
}
