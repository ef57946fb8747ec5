import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline, Readable } from 'node:stream'
import { errorResponse } from '../errors.ts'
import { createRelay, type RelayOptions } from '../index.ts'
import { ALLOW } from '../paths.ts'

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
    if (url === null) {
      res.statusCode = 400 // a target or Host that is not a URL
      return void res.end()
    }
    const aborted = new AbortController()
    const request = toRequest(req, url, aborted.signal)
    if (request === null) return void send(refusedMethod(req.method, url.pathname), res)
    res.once('close', () => res.writableFinished || aborted.abort())
    relay(request, { address: req.socket.remoteAddress ?? null }).then(
      (response) => send(response, res),
      (error) => (next ? next(error) : res.destroy(error as Error)),
    )
  }
  return Object.assign(handle, { prefix: relay.prefix, handles: relay.handles, ready: relay.ready })
}

/**
 * The request target as a URL, parsed as the WHATWG URL parser parses what Bun and Deno receive.
 * Only its path matters to the relay: an absolute-form target's authority decides nothing. User
 * info, in the target or the Host, is an error (RFC 9110 §4.2.4), and one a Web Request cannot
 * carry: undici's `new Request` throws on it, and thrown in the listener it took Node down.
 */
function parseTarget(req: IncomingMessage & { originalUrl?: string }): URL | null {
  const proto = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'
  try {
    const url = new URL(req.originalUrl ?? req.url ?? '/', `${proto}://${req.headers.host ?? 'localhost'}`)
    return url.username || url.password ? null : url
  } catch {
    return null
  }
}

/**
 * The methods a Web Request cannot carry (Fetch standard, "forbidden method"; CONNECT never reaches a
 * request listener). node:http parses TRACE, and undici's `new Request` throws on it: thrown in the
 * listener, one `TRACE /_sl/health` took the whole Node process down.
 */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK'])

/** Node's request as a Web Request; null for a method one cannot have. */
function toRequest(req: IncomingMessage, url: URL, signal: AbortSignal): Request | null {
  if (FORBIDDEN_METHODS.has(req.method!)) return null
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
  const headers: [string, string][] = []
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.push([name, item])
    else if (value !== undefined) headers.push([name, value])
  }
  return new Request(url, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : null,
    signal,
    duplex: 'half',
  } as RequestInit)
}

/** None of them is forwarded: 405 with the methods that are, as the relay answers them on a public path (RFC 9110 §15.5.6). */
const refusedMethod = (method: string | undefined, path: string) => errorResponse('method_not_allowed', `${method} is not allowed on ${path}`, { allow: ALLOW })

/** Writes a Web Response to Node's, streaming the body with backpressure. */
async function send(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status
  for (const [name, value] of response.headers) res.appendHeader(name, value)
  if (!response.body) return void res.end()
  // The client went away while core answered: nobody to send it to (piping into the closed
  // response throws on Bun).
  if (res.destroyed) return void response.body.cancel().catch(() => {})
  // pipeline, not pipe: a client gone mid-answer destroys the body, which cancels core's answer and
  // frees its connection (piped, it stayed open, read by no one, for as long as core kept sending);
  // an answer that fails midway destroys the client's response. Either way it is over: nothing to report.
  pipeline(Readable.fromWeb(response.body as unknown as import('node:stream/web').ReadableStream), res, () => {})
}
