import type { Socket } from 'bun'

export interface PartitionableProxy {
  port: number
  /** Every connection open or opened while it lasts passes nothing more, either way, and is never closed. */
  partition(): void
  /** New connections pass again; the ones cut stay dead, as TCP connections that outlived a partition's timeouts are. */
  heal(): void
  close(): void
}

/**
 * A pass-through to Postgres whose `partition()` silently drops everything (no FIN, no RST): what a
 * NAT or firewall that forgot a connection, or a partition, does. Unlike tcp-proxy's `freeze()`, the
 * connections cut stay dead after `heal()`.
 */
export function partitionableProxy(target: { host: string; port: number }): PartitionableProxy {
  type End = { peer?: Socket<End>; dead: boolean; early: Uint8Array[] }
  const open = new Set<Socket<End>>()
  let partitioned = false
  const server = Bun.listen<End>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      async open(client) {
        client.data = { dead: partitioned, early: [] }
        open.add(client)
        const upstream = await Bun.connect<End>({
          hostname: target.host,
          port: target.port,
          socket: {
            open: (socket) => void (socket.data = { peer: client, dead: false, early: [] }),
            data: (_, data) => void (client.data.dead || client.write(data)),
            close: () => void client.end(),
            error: () => void client.end(),
          },
        })
        client.data.peer = upstream
        for (const chunk of client.data.early.splice(0)) upstream.write(chunk)
      },
      data(client, data) {
        if (client.data.dead) return
        if (client.data.peer) client.data.peer.write(data)
        else client.data.early.push(new Uint8Array(data))
      },
      close(client) {
        open.delete(client)
        client.data.peer?.end()
      },
      error: (client) => void client.end(),
    },
  })
  return {
    port: server.port,
    partition() {
      partitioned = true
      for (const socket of open) socket.data.dead = true
    },
    heal: () => void (partitioned = false),
    close() {
      server.stop(true)
      for (const socket of open) socket.terminate()
    },
  }
}
