import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { createRelay, type RelayOptions } from '../index'

type Next = (error?: unknown) => void

/**
 * The relay for `node:http` (`http.createServer(nodeRelay(options))`) and, with `next`, as a
 * connect/express middleware: requests outside the prefix go on to `next`. Express strips a mount
 * path from `req.url`; `originalUrl` still has it.
 */
export function nodeRelay(options: RelayOptions) {
  const relay = createRelay(options)
  return (req: IncomingMessage & { originalUrl?: string }, res: ServerResponse, next?: Next): void => {
    const url = req.originalUrl ?? req.url ?? '/'
    if (next && !relay.handles(url.split('?', 1)[0])) return next()
    const aborted = new AbortController()
    res.once('close', () => res.writableFinished || aborted.abort())
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
    const proto = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'
    const request = new Request(`${proto}://${req.headers.host ?? 'localhost'}${url}`, {
      method: req.method,
      headers: Object.entries(req.headers).flatMap(([name, value]) => (value === undefined ? [] : Array.isArray(value) ? value.map((v): [string, string] => [name, v]) : [[name, value] as [string, string]])),
      body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : null,
      signal: aborted.signal,
      duplex: 'half',
    } as RequestInit)
    relay(request, { address: req.socket.remoteAddress }).then(
      (response) => send(response, res),
      (error) => (next ? next(error) : res.destroy(error as Error)),
    )
  }
}

/** Writes a Web Response to Node's, streaming the body with backpressure. */
async function send(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status
  for (const [name, value] of response.headers) res.appendHeader(name, value)
  if (!response.body) return void res.end()
  const body = Readable.fromWeb(response.body as unknown as import('node:stream/web').ReadableStream)
  body.once('error', (error) => res.destroy(error))
  body.pipe(res)
}
