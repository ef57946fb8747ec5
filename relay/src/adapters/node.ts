import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline, Readable } from 'node:stream'
import { errorResponse } from '../errors.ts'
import { createRelay, type RelayOptions } from '../index.ts'
import { FORBIDDEN_METHODS, targetUrl } from '../paths.ts'

type Next = (error?: unknown) => void

/**
 * The relay for `node:http` (`http.createServer(nodeRelay(options))`) and, with `next`, as a
 * connect/express middleware: requests outside the prefix go on to `next`. Express strips a mount
 * path from `req.url`; `originalUrl` still has it.
 */
export function nodeRelay(options: RelayOptions) {
  const relay = createRelay(options)
  const handle = (req: IncomingMessage & { originalUrl?: string }, res: ServerResponse, next?: Next): void => {
    const url = parseTarget(req)
    // Decided on the parsed path (dot segments and backslashes resolved), which is what Bun and Deno
    // hand their handlers: a request is the relay's on every runtime or on none.
    if (next && (url === null || !relay.handles(url.pathname))) return next()
    if (url === null) return void send(errorResponse('bad_request', 'the request target or Host is not a URL'), res)
    const aborted = new AbortController()
    const request = toRequest(req, url, aborted.signal)
    // Refused as the relay refuses any method it does not take, by path: 405 with the methods of
    // that path (the script's are GET and HEAD), or 404 for a path it does not serve.
    if (request === null) return void send(relay.refusal(req.method!, url.pathname)!, res)
    // A body parser mounted before the relay (express.json(), body-parser) has read the body already:
    // what is left of the stream is nothing. Forwarded, core got an empty body for a small one (the
    // batch lost, answered 400) and, for one over 64 KB, a stream short of its Content-Length (502
    // upstream_unreachable, blaming core). Said as what it is, and core is not contacted.
    if (req.method === 'POST' && req.readableDidRead) {
      return void send(errorResponse('body_already_read', 'the request body was read before the relay: mount it before any body parser (express.json(), body-parser)'), res)
    }
    const forward = () => {
      res.once('close', () => res.writableFinished || aborted.abort())
      relay(request, { address: req.socket.remoteAddress ?? null }).then(
        (response) => send(response, res),
        (error) => (next ? next(error) : res.destroy(error as Error)),
      )
    }
    // A request pipelined behind one still being answered: node:http parses every request of a
    // write at once and queues their answers, giving each the socket (`res.socket`, the 'socket'
    // event) when the one before is done. Forwarded at once, each held a connection to core until
    // core answered or timeoutMs passed, the client gone or not (a GET is not aborted): one write
    // of N requests opened N connections. Forwarded in turn, as nginx and Bun.serve do; one that
    // never gets its turn (the client went away) is never forwarded.
    if (res.socket) forward()
    else res.once('socket', forward)
  }
  return Object.assign(handle, { prefix: relay.prefix, handles: relay.handles, ready: relay.ready })
}

/** The request target as a URL (see `targetUrl`); Express's `originalUrl` still has its mount path. */
function parseTarget(req: IncomingMessage & { originalUrl?: string }): URL | null {
  const proto = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'
  return targetUrl(proto, hostOf(req) ?? '', req.originalUrl ?? req.url ?? '/')
}

/**
 * The Host the client sent. On `node:http2`'s compatibility API (`http2.createSecureServer(options,
 * relay)`) a request names it in `:authority` (RFC 9113 §8.3.1), and carries no Host field at all.
 */
function hostOf(req: IncomingMessage): string | undefined {
  const authority = req.headers[':authority']
  return req.headers.host ?? (typeof authority === 'string' ? authority : undefined)
}

/** Node's request as a Web Request; null for a method one cannot have. */
function toRequest(req: IncomingMessage, url: URL, signal: AbortSignal): Request | null {
  if (FORBIDDEN_METHODS.has(req.method!)) return null
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
  const headers: [string, string][] = []
  for (const [name, value] of Object.entries(req.headers)) {
    // HTTP/2's pseudo-header fields (`:method`, `:path`, `:authority`, `:scheme`) are no header
    // fields, and a Web Request refuses their names: the first HTTP/2 request threw in the listener,
    // which took the whole Node process down. What they say is in the method and URL already.
    if (name.startsWith(':')) continue
    if (Array.isArray(value)) for (const item of value) headers.push([name, item])
    else if (value !== undefined) headers.push([name, value])
  }
  // HTTP/2 names the host in `:authority`. No Host at all (HTTP/1.0): an empty one tells the relay so,
  // rather than the URL's stand-in (see parseTarget).
  if (req.headers.host === undefined) headers.push(['host', hostOf(req) ?? ''])
  return new Request(url, {
    method: req.method,
    headers,
    body: hasBody ? bodyOf(req) : null,
    signal,
    duplex: 'half',
  } as RequestInit)
}

/**
 * The request body as a Web stream, taken from Node only when the relay reads it. `Readable.toWeb`
 * starts reading at once and, left unread (a 404, a 405: answered without the body), pauses the
 * request for good: node:http then reads nothing more on that connection, so the client's next
 * request there went unanswered and the socket was held until Node's requestTimeout. A body never
 * touched is discarded by Node itself once the answer is sent, and the connection is kept.
 */
function bodyOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        reader ??= (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>).getReader()
        const { done, value } = await reader.read()
        if (done) controller.close()
        else controller.enqueue(value)
      },
      // Given up before it was read: as toWeb's own cancel does, the request goes with it.
      cancel: (reason) => (reader ? reader.cancel(reason) : void req.destroy()),
    },
    { highWaterMark: 0 },
  )
}

/** Writes a Web Response to Node's, streaming the body with backpressure. */
async function send(response: Response, res: ServerResponse): Promise<void> {
  // Nobody to send it to: the client went away while core answered (piping into the closed response
  // throws on Bun), or, with connect/express, the site answered first (a timeout middleware). Its
  // headers appended after theirs threw, in a promise nobody awaits: that ended the Node process.
  if (res.destroyed || res.headersSent) return void response.body?.cancel().catch(() => {})
  res.statusCode = response.status
  // What the site's earlier middleware put on `res` is merged as the Elysia adapter merges a site's
  // `set`: a cookie is left off (the relay never returns Set-Cookie; a site's session or visitor
  // cookie came back on every tracker request), and a field the answer has replaces the site's
  // (appended, cors() in front made core's `Access-Control-Allow-Origin: https://shop.test` into
  // `*, https://shop.test`, which no browser accepts). Vary is a list both sides add to.
  res.removeHeader('set-cookie')
  for (const [name, value] of response.headers) {
    if (name === 'vary') res.appendHeader(name, value)
    else res.setHeader(name, value)
  }
  if (!response.body) return void res.end()
  // pipeline, not pipe: a client gone mid-answer destroys the body, which cancels core's answer and
  // frees its connection (piped, it stayed open, read by no one, for as long as core kept sending);
  // an answer that fails midway destroys the client's response. Either way it is over: nothing to report.
  pipeline(Readable.fromWeb(response.body as unknown as import('node:stream/web').ReadableStream), res, () => {})
}
