import { connect, type Socket } from 'node:net'
import tls from 'node:tls'

/** What postgres.js hands a `socket` function: its parsed hosts and ports, or a Unix socket's path. */
interface Target {
  host: string[]
  port: number[]
  path?: string | false
}

/** The first wait after a connection closed unanswered, doubled with each further one up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 50
const MAX_WAIT_MS = 2_000

/** The first byte of a Postgres ErrorResponse message. */
const ERROR_RESPONSE = 0x45

/**
 * The connections of one postgres.js client, made here so that they are paced. postgres.js connects
 * again at once, without end, when a connection being opened for a query closes before the server
 * said anything (porsager/postgres#1193): no backoff, and a connect_timeout that restarts with every
 * attempt. That is what a proxy or a container's published port in front of a Postgres that is down
 * does, and it made core open about a thousand connections a second, for as long as the outage
 * lasted, on some 40% of a core: enough to use up the host's ephemeral ports within a minute. A
 * server shutting down answers each connection with an error and closes it, and postgres.js opens
 * a LISTEN connection again at once when it is lost: some 600 connections a second. After such a
 * connection the next waits, from 50 ms doubling to 2 s, until one is answered again.
 *
 * Answered is any connection of the client's, not only the last one made: the pool opens several at
 * once, and one answered while others still wait out their pause means the server is back, so those
 * go at once. Waiting on, they kept reservations that had been handed to them for up to 2 s after
 * another connection was already in use.
 *
 * This is the only pacing the client's connections get: see `connect` in db.ts for postgres.js's own.
 *
 * The sockets are made as postgres.js makes them (the host list in turn, or the Unix socket); it
 * still negotiates TLS, keepalive and the rest on them.
 *
 * With `silentMs`, a connection is also given up once it has sent and heard nothing back for that
 * long (see silenceWatch).
 *
 * Under TLS, postgres.js reads, writes and listens through the TLS socket it wraps around the one
 * made here (see whenWrappedInTls): the mends reach that one too, and the watch moves on to it.
 */
export function pacedSockets({ silentMs }: { silentMs?: number } = {}): (target: Target) => Promise<Socket> {
  const watch = silentMs === undefined ? undefined : silenceWatch(silentMs)
  let unanswered = 0
  let attempt = 0
  /** Ends the pauses under way, once a connection is answered. */
  const pausing = new Set<() => void>()
  return async (target) => {
    if (unanswered > 0) await pause(Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** (unanswered - 1)), pausing)
    const i = attempt++ % target.host.length
    const socket = target.path ? connect(target.path) : connect(target.port[i], target.host[i])
    // postgres.js names the server from these in its errors, and as TLS's server name.
    Object.assign(socket, { host: target.host[i], port: target.port[i] })
    // The server answered: it is up, whatever came before. Unless its answer is an error, which
    // is how Postgres turns connections away while it shuts down or starts up (57P03) and when it
    // has too many (53300): such a connection counts as unanswered, and the next waits its pause.
    let answered = false
    socket.once('data', (chunk: Buffer) => {
      if (chunk[0] === ERROR_RESPONSE) return
      answered = true
      unanswered = 0
      for (const end of pausing) end()
    })
    socket.once('close', () => {
      if (!answered) unanswered++
    })
    mendEvents(socket)
    watch?.watch(socket)
    whenWrappedInTls(socket, (secure) => {
      mendEvents(secure)
      watch?.handOver(socket, secure)
    })
    return socket
  }
}

/** Waits `ms`, or less if a connection is answered meanwhile. */
function pause(ms: number, pausing: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    const end = () => {
      clearTimeout(timer)
      pausing.delete(end)
      resolve()
    }
    const timer = setTimeout(end, ms)
    pausing.add(end)
  })
}

/**
 * Two ways postgres.js (3.4.9) and Bun's sockets come apart when a connection is lost, both mended
 * here, on the events of the socket postgres.js listens to: the one made here, and under TLS the
 * TLS socket wrapped around it too (both failures happened there as well, measured: the close that
 * postgres.js hears under TLS is the TLS socket's, and so is the error nobody listens to any more).
 *
 * postgres.js gathers the writes of one turn of the event loop and sends them from a setImmediate.
 * When a connection's socket closes with such a write pending, it cancels the setImmediate but keeps
 * its handle and the bytes (porsager/postgres#1208 and the reports around it, open upstream): the
 * connection's next sockets are never written to again, not even the startup message, so each waits
 * out connect_timeout in silence, for as many rounds as it takes the bytes piled up to pass 1 KB. A
 * Postgres server restarted under load did that: commits waited for 10 s, and the server itself took
 * 5 s to stop while a silent connection held it. So postgres.js hears of a close only once the writes
 * pending when it came were made: they go nowhere (a closed socket takes them and says nothing), and
 * its state is clean when it connects again. Two turns, so that a write gathered in the turn the
 * close came in, after it, is made first too.
 *
 * When it hears of the close, postgres.js removes every listener of the socket, its `error` one too.
 * Bun may still report the connection's end as an error after that (ECONNRESET from its own close),
 * and an `error` event nobody listens to is thrown: it ended a core process during a server restart.
 * Such an error says nothing about a connection already handled as closed; it is dropped.
 */
function mendEvents(socket: Socket): void {
  const emit = socket.emit
  socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
    if (event === 'error' && this.listenerCount('error') === 0) return false
    if (event !== 'close') return emit.call(this, event, ...args)
    setImmediate(() => setImmediate(() => emit.call(this, event, ...args)))
    return true
  } as Socket['emit']
}

/** Of a watched socket: how much it had written when it last heard something, and since when it waits for an answer. */
interface Heard {
  writtenAtLastData: number
  waitingSince: number | undefined
}

/**
 * Destroys a socket that has sent and heard nothing back for `silentMs`. A partition (packets dropped,
 * no FIN or RST) leaves a connection open with a statement on it that postgres.js waits for as long as
 * TCP retransmits, some 15 minutes: the writer and the reads give up on it at 10 s, but the connection
 * stays taken, and once every connection of the pool is, every write waits 10 s for a 503 and /health
 * stays degraded long after the network is back. Destroyed, it closes as any lost connection does
 * (through mendEvents): postgres.js fails what was on it as CONNECTION_CLOSED, the writer's
 * transaction as lost (postgres-transaction.ts), and it connects again, which works once the network
 * is back. A connection that wrote nothing since it last heard something (idle, or a LISTEN one
 * waiting for notifications) is never silent in this sense.
 *
 * What the socket wrote is its own count of bytes; each `data` event notes it, and one timer for all
 * of a client's sockets, made while it has some, looks which wrote more since: nothing on the path of
 * a write, and no timer per statement. (Comparing both counts at each look instead missed a statement
 * written after an answer within the same look, the first on a new connection for one.) Under TLS
 * the watch is handed over to the TLS socket postgres.js wraps around this one (see whenWrappedInTls):
 * that one alone counts and hears what the connection carries from then on.
 */
function silenceWatch(silentMs: number): { watch: (socket: Socket) => void; handOver: (from: Socket, to: Socket) => void } {
  const watched = new Map<Socket, Heard>()
  let timer: ReturnType<typeof setInterval> | undefined
  const forget = (socket: Socket) => {
    watched.delete(socket)
    if (watched.size > 0 || !timer) return
    clearInterval(timer)
    timer = undefined
  }
  const look = () => {
    const now = performance.now()
    for (const [socket, heard] of watched) {
      // Also here: postgres.js removes every listener of a socket it is done with, our `close` one too.
      if (socket.destroyed) forget(socket)
      else if (socket.bytesWritten > heard.writtenAtLastData) {
        heard.waitingSince ??= now
        if (now - heard.waitingSince < silentMs) continue
        forget(socket)
        socket.destroy()
      }
    }
  }
  const watch = (socket: Socket) => {
    const heard: Heard = { writtenAtLastData: 0, waitingSince: undefined }
    watched.set(socket, heard)
    // Seen as emitted, rather than listened to: a `data` listener would set the stream flowing.
    const emit = socket.emit
    socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
      if (event === 'data') {
        heard.writtenAtLastData = this.bytesWritten
        heard.waitingSince = undefined
      }
      return emit.call(this, event, ...args)
    } as Socket['emit']
    // A few looks within `silentMs`: a connection is given up between silentMs and a fifth more.
    timer ??= setInterval(look, Math.min(1_000, Math.max(50, silentMs / 5)))
    timer.unref()
    socket.once('close', () => forget(socket))
  }
  const handOver = (from: Socket, to: Socket) => {
    forget(from)
    watch(to)
  }
  return { watch, handOver }
}

/** For each socket made here that may be wrapped in TLS: what to do with the TLS socket. */
const tlsWrapping = new WeakMap<Socket, (secure: Socket) => void>()
let tlsConnectWrapped = false

/**
 * Calls `then` with the TLS socket postgres.js wraps around `socket`, if it does. Under TLS (sslmode
 * require or verify-full: what every managed Postgres asks for) postgres.js sends its SSLRequest on
 * the socket made here, then calls `tls.connect({ socket })` and reads and writes through the socket
 * that returns alone. Bun hands the connection over to it: the socket made here counts no byte
 * written and emits no `data` after that (measured), so a watch left on it never saw a connection
 * under TLS go silent, and a partition left it stuck for as long as TCP retransmits. postgres.js
 * gives no way to reach the TLS socket, so node:tls's `connect` (which postgres.js calls through the
 * module, as `tls.connect`) is wrapped, once per process, to hand over the ones made on our sockets;
 * every other TLS connection is made as before. Nothing is added on the path of a read or a write.
 */
function whenWrappedInTls(socket: Socket, then: (secure: Socket) => void): void {
  tlsWrapping.set(socket, then)
  if (tlsConnectWrapped) return
  tlsConnectWrapped = true
  const tlsConnect = tls.connect
  tls.connect = function (this: unknown, ...args: unknown[]) {
    const secure = (tlsConnect as (...args: unknown[]) => tls.TLSSocket).apply(this, args)
    const wrapped = (args[0] as tls.ConnectionOptions | undefined)?.socket as Socket | undefined
    const then = wrapped && tlsWrapping.get(wrapped)
    if (then) {
      tlsWrapping.delete(wrapped)
      then(secure)
    }
    return secure
  } as typeof tls.connect
}
