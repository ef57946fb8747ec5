import type { Socket } from 'bun'
import type { ClientConnection } from './state.ts'

/**
 * Writing to the client: what the socket does not take at once waits, in order, for its `drain`,
 * and whoever writes the next piece of an answer waits with it (`flushed`), so a slow reader slows
 * core down instead of filling the relay's memory.
 */

export function send(conn: ClientConnection, bytes: Uint8Array): void {
  if (conn.closed) return
  if (conn.backlog) {
    conn.backlog.push(bytes)
    return
  }
  const written = conn.socket.write(bytes)
  if (written < bytes.byteLength) conn.backlog = [bytes.subarray(Math.max(written, 0))]
}

const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n', 'latin1')

/** RFC 9110 §15.2.1: the client that asked may send its body now (in order behind any answer still being written). */
export const sendContinue = (conn: ClientConnection): void => send(conn, CONTINUE)

/** Whether everything written so far has gone to the socket. */
export const isFlushed = (conn: ClientConnection): boolean => conn.backlog === null

/** Settles once what was written so far has gone to the socket (at once when it has). */
export function flushed(conn: ClientConnection): Promise<void> {
  if (!conn.backlog || conn.closed) return Promise.resolve()
  return new Promise<void>((resolve) => conn.drainWaiters.push(resolve))
}

/** The socket took what it had: the backlog goes next, and the waiters hear once it is all gone. */
export function onDrain(socket: Socket<ClientConnection>): void {
  const conn = socket.data
  while (conn.backlog && conn.backlog.length > 0) {
    const bytes = conn.backlog[0]
    const written = socket.write(bytes)
    if (written < bytes.byteLength) {
      conn.backlog[0] = bytes.subarray(Math.max(written, 0))
      return
    }
    conn.backlog.shift()
  }
  conn.backlog = null
  wakeDrainWaiters(conn)
}

/** Everyone waiting for the socket, told it is drained or gone. */
export function wakeDrainWaiters(conn: ClientConnection): void {
  const waiters = conn.drainWaiters
  if (waiters.length === 0) return
  conn.drainWaiters = []
  for (const wake of waiters) wake()
}
