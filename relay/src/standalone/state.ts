import type { Socket } from 'bun'
import type { Forwarding } from './forward.ts'
import type { RequestError, RequestHead } from './request-parser.ts'

/**
 * The records of the standalone server (serve.ts): one per client connection, and the request it
 * is reading or answering. HTTP/1.1 answers in order (RFC 9112 §9.3.2), so a connection carries one
 * request at a time; what a client pipelines behind it waits, parsed only once its turn comes.
 */

export interface ClientConnection {
  socket: Socket<ClientConnection>
  forwarding: Forwarding
  /** The client's address, for X-Forwarded-For (read once: Bun forgets it once the socket closes). */
  address: string | null
  /** Bytes received that no request has taken yet: the next head, pipelined behind the one answered. */
  pending: Buffer | null
  /** The request being read or answered; null between requests. */
  request: ClientRequest | null
  /** Bytes the socket did not take yet, in order, and who waits for them to go (output.ts). */
  backlog: Uint8Array[] | null
  drainWaiters: (() => void)[]
  /** Reading is paused: the relay has all it can hold until the request in progress moves on. */
  paused: boolean
  closed: boolean
  /** Its last answer is given: it closes once that is written, and reads nothing more as a request. */
  ending: boolean
  /** When it last read or drained, on the server's clock of whole seconds: silence past `idleSeconds` closes it. */
  heardAt: number
  /** The server is stopping: this connection ends after the answer in progress. */
  stopping: boolean
}

export interface ClientRequest {
  head: RequestHead
  /** How the rest of the body arrives and where it goes; null when the request has none. */
  body: BodyIntake | null
  /** The connection cannot carry another request after this one (the client's word, or a body left unread). */
  lastOnConnection: boolean
  /** Aborted when the client goes away before its answer is written. Made on first use. */
  aborter: AbortController | null
}

/** A request body being read off the connection. */
export interface BodyIntake {
  /** Takes the body's bytes from `data` and returns those past its end (the next request), or null. */
  take(data: Buffer): Buffer | null
  /** The body's end was read. */
  done: boolean
  /** The client went away before the body's end: whoever reads it hears so. */
  abandon?(): void
  /** Framing that could not be read (a malformed chunk): the request's answer is this 400, whatever the relay made of the cut body. */
  failure?: RequestError

}
