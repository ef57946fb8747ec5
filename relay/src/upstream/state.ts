import type { Socket, SocketHandler } from 'bun'
import type { AnswerSink, BodyController, UpstreamRequest } from './types.ts'
import type { ResponseParser } from './parser.ts'
import type { exchangeClock, TimedExchange } from './timing.ts'
import type { Slots } from './slots.ts'

/**
 * The records of the socket client (socket.ts): its exchanges, connections and pools, and the state
 * of one client, made once and passed explicitly to the functions of the files beside this one, so
 * that each works on what it is given rather than on closures of one long function.
 */

/** One client's settings, pools and shared parts. */
export interface ClientState {
  /** By origin, made on first use. */
  pools: Map<string, Pool>
  clock: ReturnType<typeof exchangeClock<Exchange>>
  /** The socket callbacks every connection of this client shares. */
  handlers: SocketHandler<Connection>
  /** Idle connections kept per upstream. */
  maxIdle: number
  /** A connection idle longer than this is closed rather than reused. */
  maxIdleMs: number
  maxConnections: number
  maxQueued: number
}

export interface Exchange extends TimedExchange {
  request: UpstreamRequest
  /** Where the answer goes as parts instead of a Response (`socketClient(...).forward`). */
  sink: AnswerSink | null
  /** With the answer's Response, or null once a sink has its head. */
  resolve(response: Response | null): void
  reject(error: unknown): void
  /** The connection carrying it, once there is one. */
  conn: Connection | null
  answered: boolean
  /** The whole request is written. */
  sent: boolean
  onAbort: (() => void) | undefined
  /** The answer's body while it streams. */
  body: BodyController | null
  /** Waiting for a connection (slots.ts). */
  queued: boolean
  /** The signal `onAbort` listens on. */
  watched: AbortSignal | null
}

export interface Connection {
  pool: Pool
  socket: Socket<Connection> | null
  parser: ResponseParser
  exchange: Exchange | null
  /** The exchange this connection is being opened for, until it is attached (or the connect fails). */
  connectingFor: Exchange | null
  /** Set when the socket has been used before: a failure before any answer may then be retried. */
  reused: boolean
  idleSince: number
  /** Bytes `write` did not take yet, and who waits for them to go. */
  backlog: Uint8Array | null
  drained: (() => void) | null
  /** Paused for backpressure: the client is behind on the answer's body. */
  paused: boolean
  closed: boolean
  /** Counted in its pool's slots until it closes, or hands its slot on (a resend's connection). */
  holdsSlot: boolean
  /** Its exchange was given up while it connected, and its slot went on (`letGo`, connection.ts). */
  letGo: boolean
}

export interface Pool {
  hostname: string
  port: number
  tls: boolean
  host: string
  idle: Connection[]
  /** Every connection of the pool from its connect to its close: busy, connecting or idle (the clock looks here). */
  conns: Connection[]
  slots: Slots<Exchange>
  /** Connects let go (`letGo`, connection.ts) still under way. */
  connectsLetGo: number
}
