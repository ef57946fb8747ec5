import { cappedStream, readUpTo } from './body.ts'
import { errorResponse, UpstreamError } from './errors.ts'
import { bearerToken, canCarryKey, KEY_IN_BODY_MAX_BYTES, shouldMoveKey, upstreamHeaders, writeKeyIntoBody, type ClientInfo, type KeyInBody } from './headers.ts'
import { allowOn, FORWARDED_METHODS, isForwardedPath, normalizePrefix, splitUrl, underPrefix, type SplitUrl } from './paths.ts'
import { serveScript, type ScriptOptions } from './script.ts'
import { fetchClient } from './upstream/fetch.ts'
import type { UpstreamClient } from './upstream/types.ts'

export type { ClientInfo, KeyInBody } from './headers.ts'
export type { ScriptOptions } from './script.ts'
export type { UpstreamClient, UpstreamRequest } from './upstream/types.ts'
export { fetchClient } from './upstream/fetch.ts'

export interface RelayOptions {
  /** Core's base URL, e.g. "http://127.0.0.1:8000" (a path is kept: "https://internal/sightline"). */
  upstream: string | URL
  /** The path the site mounts the relay under, e.g. "/_sl". */
  prefix: string
  /** Move the Bearer key into small JSON bodies ("auto", the default), always, or never. */
  keyInBody?: KeyInBody
  /** Bodies over this many bytes get 413 (default 5 MiB, core's largest limit). */
  maxBodyBytes?: number
  /**
   * The longest core may stay silent (default 30 s): before its answer begins, the client gets 504;
   * in the middle of its body, while the client reads, the answer is cut off (see upstream/timing.ts).
   */
  timeoutMs?: number
  /** Serve the tracker's browser bundle at `<prefix>/<name>` (without it, that path is 404 like any other). */
  script?: ScriptOptions
  /** How requests reach core (default: `fetch`). The Bun and Elysia adapters pass a pooled socket client. */
  client?: UpstreamClient
  /**
   * Connections open to core at most (default 256), and requests waiting for one at most (default
   * 1024) before the relay answers 503 itself, on the client the relay makes: the socket client
   * (Bun, Elysia, standalone) or `fetch` (Node, Deno, and `createRelay` left to its default), where
   * they bound exchanges in flight, each of which holds a connection. A `client` passed in has its own.
   */
  maxConnections?: number
  maxQueued?: number
}

export interface Relay {
  /** Answers one request. `client` carries the socket's address for `X-Forwarded-For`. */
  (request: Request, client?: ClientInfo): Promise<Response>
  /** The normalized prefix ("/_sl"). */
  readonly prefix: string
  /** Where the relay serves the script under the prefix ("/t.js"); null without one. */
  readonly scriptPath: string | null
  /** The longest core may stay silent, as configured: servers with an idle timeout of their own must allow it (adapters/bun.ts). */
  readonly timeoutMs: number
  /** Whether a request path is under the prefix (middleware passes the others on). */
  handles(path: string): boolean
  /**
   * The 404 or 405 the relay answers a method on a path, or null when it would serve or forward
   * them: for a method a Web Request cannot carry (node:http parses TRACE), which never reaches it.
   */
  refusal(method: string, path: string): Response | null
  /**
   * Settles once the script is read and compressed (at once without one); rejects, saying why,
   * when it cannot be served. The relay reports that on stderr by itself and keeps running.
   */
  readonly ready: Promise<void>
}

interface PreparedBody {
  body: Uint8Array | ReadableStream<Uint8Array> | null
  keyMoved: boolean
  /** Set for a body of undeclared size, which is counted as it streams. */
  overLimit: { seen: boolean } | null
}

const NO_BODY: PreparedBody = { body: null, keyMoved: false, overLimit: null }

/**
 * `?compression=` in the query: the body is compressed and takes no key. Core reads query names
 * decoded (`?%63ompression=deflate` is compression to it), so a name with any percent-encoding counts
 * too: taken for plain, a raw-deflate body that happens to start with "{" had the key written into
 * it and core could no longer inflate it. Such a body keeps the header, which core reads first anyway.
 */
export const QUERY_COMPRESSION = /[?&](?:compression=|[^&=]*%)/

/**
 * The body size the client declared. A field repeated with one value arrives as a list ("2, 2"),
 * which Bun accepts (RFC 9110 §8.6 lets a recipient take it as that value); read as a number it was
 * NaN, and a body of two bytes was refused as over the limit. Differing values are the runtime's to
 * refuse (Bun and Node answer 400); one that got through would still be NaN, refused with 413.
 */
function declaredLength(value: string | null): number | null {
  if (value === null) return null
  const length = Number(value)
  if (!Number.isNaN(length) || !value.includes(',')) return length
  const [first, ...rest] = value.split(',').map((item) => item.trim())
  return rest.every((item) => item === first) ? Number(first) : NaN
}

/** Bodies larger are refused with 413 before core is contacted, unless `maxBodyBytes` says otherwise. */
export const DEFAULT_MAX_BODY_BYTES = 5 * 1024 * 1024

/** What a relay makes of its options: read and checked once, by `createRelay` and by the standalone server's own forwarding. */
export interface RelaySettings {
  prefix: string
  /** Core's origin ("http://127.0.0.1:8000") and the path it is mounted under ("" or "/sightline"). */
  origin: string
  basePath: string
  mode: KeyInBody
  maxBodyBytes: number
  timeoutMs: number
}

export function relaySettings(options: RelayOptions): RelaySettings {
  const prefix = normalizePrefix(options.prefix)
  const upstream = parseUpstream(options.upstream)
  if (upstream.search || upstream.hash || upstream.username || upstream.password) throw new TypeError('relay upstream is an origin with an optional path, nothing else')
  const mode = options.keyInBody ?? 'auto'
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const timeoutMs = options.timeoutMs ?? 30_000
  checkOptions(mode, maxBodyBytes, timeoutMs)
  return { prefix, origin: upstream.origin, basePath: upstream.pathname.replace(/\/+$/, ''), mode, maxBodyBytes, timeoutMs }
}

export function createRelay(options: RelayOptions): Relay {
  const { prefix, origin, basePath, mode, maxBodyBytes, timeoutMs } = relaySettings(options)
  const send = options.client ?? fetchClient({ maxConnections: options.maxConnections, maxQueued: options.maxQueued })
  const script = options.script ? serveScript(options.script, prefix) : null

  /**
   * The body as it goes upstream: small ones are read (and may take the key), larger ones stream.
   * A body of undeclared size is read up to the small size to learn which it is. A small body of
   * declared size is read without its stream ever being made (`request.body`): Bun builds one on
   * that read, about a microsecond a request, even when `arrayBuffer()` follows.
   */
  async function prepareBody(request: Request, body: ReadableStream<Uint8Array> | null, declared: number | null, search: string): Promise<PreparedBody> {
    const bearer = bearerToken(request.headers.get('authorization'))
    const facts = { method: request.method, contentLength: declared, contentEncoding: request.headers.get('content-encoding'), queryCompression: QUERY_COMPRESSION.test(search), hasBearer: bearer !== null }
    let bytes: Uint8Array
    if (declared === null) {
      const limit = mode === 'always' && canCarryKey(mode, facts) ? maxBodyBytes : Math.min(KEY_IN_BODY_MAX_BYTES, maxBodyBytes)
      const first = await readUpTo(body!, limit)
      if (first.rest && limit === maxBodyBytes) {
        // Already past the limit: refused before core is contacted.
        await first.rest.cancel().catch(() => {})
        throw new UpstreamError('too_large', `the body is over the limit of ${maxBodyBytes} bytes`)
      }
      if (first.rest) return streamed(first.rest)
      bytes = first.bytes
    } else if (declared <= KEY_IN_BODY_MAX_BYTES || shouldMoveKey(mode, facts)) {
      bytes = new Uint8Array(await request.arrayBuffer())
    } else {
      return { body: request.body, keyMoved: false, overLimit: null }
    }
    const rewritten = shouldMoveKey(mode, { ...facts, contentLength: bytes.byteLength }) ? writeKeyIntoBody(bytes, bearer!) : null
    return { body: rewritten ?? bytes, keyMoved: rewritten !== null, overLimit: null }
  }

  /** A body of undeclared size past the small size: counted as it streams, 413 past the limit. */
  function streamed(body: ReadableStream<Uint8Array>): PreparedBody {
    const overLimit = { seen: false }
    return { body: cappedStream(body, maxBodyBytes, () => (overLimit.seen = true)), keyMoved: false, overLimit }
  }

  function exchange(request: Request, target: string, url: SplitUrl, client: ClientInfo, prepared: PreparedBody): Promise<Response> {
    const { body } = prepared
    const isStream = body instanceof ReadableStream
    return send({
      origin,
      target,
      method: request.method,
      headers: upstreamHeaders(request.headers, client, url, prepared.keyMoved),
      body,
      contentLength: body instanceof Uint8Array ? body.byteLength : isStream ? declaredLength(request.headers.get('content-length')) : null,
      // Only a streamed body needs watching: a read body is in core's hands once sent, and core
      // finishes it whether or not the client waits, so the connection is better kept for reuse.
      signal: isStream ? request.signal : undefined,
      incoming: request,
      timeoutMs,
    }).catch((error) => (prepared.overLimit?.seen ? tooLarge() : gatewayError(error)))
  }

  const tooLarge = () => errorResponse('payload_too_large', `the body is over the relay's limit of ${maxBodyBytes} bytes`, { connection: 'close' })

  /**
   * The relay's own 404 or 405 for a method on a path (`path` under the prefix, null when outside
   * it), or null when it serves the script or forwards. Decided by path first, then method.
   */
  function refusal(method: string, fullPath: string, path: string | null): Response | null {
    if (path === null) return errorResponse('not_found', `no route for ${fullPath}`)
    if (script && path === script.path) {
      if (method === 'GET' || method === 'HEAD') return null
      return errorResponse('method_not_allowed', `${method} is not allowed on ${fullPath}`, { allow: 'GET, HEAD' })
    }
    if (!isForwardedPath(path)) return errorResponse('not_found', `no route for ${fullPath}`)
    if (!FORWARDED_METHODS.has(method)) return errorResponse('method_not_allowed', `${method} is not allowed on ${fullPath}`, { allow: allowOn(path) })
    return null
  }

  const relay = (request: Request, client: ClientInfo = {}): Promise<Response> => {
    const url = splitUrl(request.url)
    const { path: fullPath, search } = url
    const path = underPrefix(fullPath, prefix)
    const method = request.method
    const refused = refusal(method, fullPath, path)
    if (refused) return Promise.resolve(refused)
    if (script && path === script.path) return script.respond(request)

    const target = basePath + path + search
    if (method !== 'POST') return exchange(request, target, url, client, NO_BODY)
    const contentLength = declaredLength(request.headers.get('content-length'))
    // Only a body of undeclared size needs its stream looked at to know whether there is one.
    const body = contentLength === null ? request.body : null
    if (contentLength === 0 || (contentLength === null && !body)) return exchange(request, target, url, client, NO_BODY)
    if (contentLength !== null && !(contentLength <= maxBodyBytes)) return Promise.resolve(tooLarge())
    return prepareBody(request, body, contentLength, search).then(
      (prepared) => exchange(request, target, url, client, prepared),
      // Reading the client's body failed: over the limit, or the client went away.
      (error) => (error instanceof UpstreamError && error.reason === 'too_large' ? tooLarge() : errorResponse('client_closed_request', 'the client went away')),
    )
  }

  return Object.assign(relay, {
    prefix,
    scriptPath: script ? script.path : null,
    timeoutMs,
    handles: (path: string) => underPrefix(path, prefix) !== null,
    refusal: (method: string, path: string) => refusal(method, path, underPrefix(path, prefix)),
    ready: script ? script.ready : Promise.resolve(),
  })
}

/**
 * Core's base URL, refused with the value it was given and what one looks like: the URL parser's own
 * "Invalid URL" named neither, and `127.0.0.1:8000` or `localhost:8000` (the scheme left off, the
 * likeliest slip) parse as a URL of scheme "localhost:", refused as "not localhost:".
 */
function parseUpstream(value: string | URL): URL {
  const example = 'an http or https URL such as http://127.0.0.1:8000'
  let upstream: URL
  try {
    upstream = new URL(value)
  } catch {
    throw new TypeError(`relay upstream ${JSON.stringify(String(value))} is not a URL: core's base URL is ${example}`)
  }
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') throw new TypeError(`relay upstream ${JSON.stringify(String(value))} is not http or https: core's base URL is ${example}`)
  return upstream
}

const KEY_IN_BODY_MODES = new Set<unknown>(['auto', 'always', 'never'])

/**
 * The longest delay a runtime timer holds: past it, setTimeout fires after 1 ms (Bun and Node, with a
 * TimeoutOverflowWarning), and the fetch client answered every request 504 at once.
 */
const MAX_TIMEOUT_MS = 2 ** 31 - 1

/**
 * Settings the relay could not honour, refused when it is made (a TypeError, which the standalone
 * mode reports as a usage error) rather than met on every request: an unknown `keyInBody` (`false`,
 * "none") acted as "auto", a `maxBodyBytes` of NaN refused every body, and a `timeoutMs` given as a
 * string (an environment variable passed on) never expired on the socket client.
 */
function checkOptions(mode: unknown, maxBodyBytes: unknown, timeoutMs: unknown): asserts mode is KeyInBody {
  if (!KEY_IN_BODY_MODES.has(mode)) throw new TypeError(`relay keyInBody is "auto", "always" or "never", not ${JSON.stringify(mode)}`)
  if (!Number.isSafeInteger(maxBodyBytes) || (maxBodyBytes as number) < 0) throw new TypeError(`relay maxBodyBytes must be a whole number of bytes, not ${String(maxBodyBytes)}`)
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) throw new TypeError(`relay timeoutMs must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, not ${String(timeoutMs)}`)
}

export function gatewayError(error: unknown): Response {
  const reason = error instanceof UpstreamError ? error.reason : 'refused'
  if (reason === 'timeout') return errorResponse('upstream_timeout', 'core did not answer in time; retry later', { 'retry-after': '5' })
  if (reason === 'overloaded') return errorResponse('overloaded', 'the relay has too many requests waiting for core; retry later', { 'retry-after': '1' })
  if (reason === 'aborted') return errorResponse('client_closed_request', 'the client went away')
  return errorResponse('upstream_unreachable', 'core could not be reached; retry later', { 'retry-after': '5' })
}
