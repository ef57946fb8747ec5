/**
 * Pure header rules of the relay: what goes to core, what comes back, and when the key moves into
 * the body. No I/O; every function takes what it needs as parameters.
 */

/** A header list as it goes upstream: one pass over the incoming headers, no Headers object rebuilt. */
export type HeaderList = [name: string, value: string][]

/**
 * Fields that belong to one connection, dropped in both directions. Names are lower case, as
 * `Headers` iterates them.
 */
const HOP_BY_HOP = [
  // RFC 9110 §7.6.1: Connection and the connection-specific fields a proxy must not forward.
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'transfer-encoding',
  'upgrade',
  // RFC 9110 §6.6.2: Trailer announces trailer fields of this message's framing, which the relay
  // does not carry over (the body is framed again on the next hop).
  'trailer',
]

/** Request fields that end at the relay. */
const REQUEST_DROPPED = new Set([
  ...HOP_BY_HOP,
  // RFC 9110 §11.7.2: Proxy-Authorization is consumed by the proxy it is meant for.
  'proxy-authorization',
  // RFC 9110 §7.2: Host names the relay's origin; the upstream connection gets its own Host.
  'host',
  // RFC 9110 §8.6: Content-Length is set again for the body actually sent (it may change size).
  'content-length',
  // RFC 9110 §10.1.1: Expect is answered by the server that received it; the relay reads the body.
  'expect',
  // RFC 9110 §12.5.3: the relay passes response bytes through untouched; a fetch implementation
  // would inflate an encoded answer behind our back, so core is asked for identity (below).
  'accept-encoding',
  // Never forwarded: the site's cookies are not core's business (and may be sessions).
  'cookie',
  // RFC 2965 §3.3.5's Cookie2 (obsoleted by RFC 6265), which some old clients still send beside
  // Cookie: the site's too, and nothing core reads.
  'cookie2',
  // Set by the relay below from what it saw itself.
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-for',
  // The client's own word on its address, proto or host. RFC 7239 §8.1: Forwarded "cannot be relied
  // upon to be correct" unless a trusted proxy wrote it, and the relay is the hop that knows the
  // client; the de facto fields are the same claim (X-Real-IP: nginx's realip; the rest are read by
  // address helpers such as request-ip). Core reads none of them, but whatever sits behind the relay
  // and does would believe an address the browser made up. The relay writes no Forwarded of its own:
  // X-Forwarded-For is the one list it keeps (core reads it), and two lists can disagree, each reader
  // believing the other.
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-cluster-client-ip',
])

/** Response fields that end at the relay. */
const RESPONSE_DROPPED = new Set([
  ...HOP_BY_HOP,
  // RFC 9110 §11.7.1: Proxy-Authenticate is addressed to the client of the relay's own upstream hop.
  'proxy-authenticate',
  // Never returned: core sets no cookie, and the relay must not let anything set one on the site.
  'set-cookie',
  'set-cookie2',
  // Policies a browser keeps for the whole origin that sent them, which on a relayed answer is the
  // site's, not core's. Core sets none; a CDN or TLS terminator in front of it does (Cloudflare adds
  // NEL and Report-To to every answer): passed on, the site's visitors reported the site's network
  // errors to that CDN for a week, took core's HSTS (includeSubDomains) or Alt-Svc for the site's, or
  // had the site's storage cleared.
  'clear-site-data',
  'strict-transport-security',
  'alt-svc',
  'nel',
  'report-to',
  'reporting-endpoints',
])

/** Extra field names listed in a Connection header (RFC 9110 §7.6.1: they are hop-by-hop too). */
export function connectionOptions(connection: string | null): Set<string> | null {
  if (!connection) return null
  const names = new Set<string>()
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase()
    if (name && name !== 'close' && name !== 'keep-alive') names.add(name)
  }
  return names.size > 0 ? names : null
}

export const isDroppedResponseHeader = (name: string, connectionNamed: Set<string> | null = null): boolean =>
  RESPONSE_DROPPED.has(name) || (connectionNamed !== null && connectionNamed.has(name))

/**
 * Core's answer without the fields that end at the relay, for clients that hand back a finished
 * Response (fetch), with `body` in place of its own when given. Rebuilt only when one of them is
 * present or the body is another.
 */
export function withoutDroppedHeaders(response: Response, body: ReadableStream<Uint8Array> | null = response.body): Response {
  const named = connectionOptions(response.headers.get('connection'))
  let dropped = false
  // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, which an intermediary removes before
  // passing the answer on (as the socket client's parser does). Bun's fetch keeps both fields.
  let chunked = false
  response.headers.forEach((_, name) => {
    if (isDroppedResponseHeader(name, named)) dropped = true
    if (name === 'transfer-encoding') chunked = true
  })
  if (!dropped && body === response.body) return response
  let headers = response.headers
  if (dropped) {
    headers = new Headers()
    response.headers.forEach((value, name) => {
      if (!isDroppedResponseHeader(name, named) && !(chunked && name === 'content-length')) headers.append(name, value)
    })
  }
  return new Response(body, { status: response.status, statusText: response.statusText, headers })
}

/** What the relay knows about the connection it received the request on. */
export interface ClientInfo {
  /**
   * The client's address (the socket peer), when the runtime tells it; null when the runtime tells
   * addresses but had none for this request (Bun and Node forget a peer once its connection is gone).
   */
  address?: string | null
}

/**
 * The forwarding fields: the client address is appended to any `X-Forwarded-For` it arrived with,
 * not put in its place. Appending lets a proxy in front of the relay (a load balancer) carry the real
 * client through, and gives the browser nothing: each proxy adds on the right (RFC 7239 §4, the
 * order X-Forwarded-For follows too), and readers walk the list from the right past the hops they
 * trust (core's `TRUSTED_PROXIES`), so an entry left of the peer the relay saw is believed only when
 * the operator listed that peer as a trusted proxy. Proto and host are what this request used.
 * A peer the runtime could not name is appended as `unknown` (RFC 7239 §6.2's word for it), never
 * left out: core reads the list from the right, and would take the client's own last entry for the
 * address the relay saw. A runtime that tells no addresses at all (undefined) passes the list on.
 */
export function forwardingHeaders(incomingForwardedFor: string | null, clientAddress: string | null | undefined, proto: string, host: string | null): HeaderList {
  const list: HeaderList = []
  const appended = clientAddress === null ? 'unknown' : clientAddress
  const forwardedFor = appended ? (incomingForwardedFor ? `${incomingForwardedFor}, ${appended}` : appended) : incomingForwardedFor
  if (forwardedFor) list.push(['x-forwarded-for', forwardedFor])
  list.push(['x-forwarded-proto', proto])
  if (host) list.push(['x-forwarded-host', host])
  return list
}

/** Request fields as `Headers` visits them (lower-case names, a repeated field joined): a Headers, or the standalone server's parsed list. */
export interface FieldSource {
  forEach(visit: (value: string, name: string) => void): void
}

/**
 * The request headers for core: the incoming ones without the dropped fields, plus the forwarding
 * fields. `dropAuthorization` when the key moved into the body. One pass over the incoming headers
 * (each step of which crosses into the runtime), no lookups by name.
 */
export function upstreamHeaders(incoming: FieldSource, client: ClientInfo, url: { proto: string; host: string }, dropAuthorization: boolean): HeaderList {
  let list: HeaderList = []
  let connection: string | null = null
  let forwardedFor: string | null = null
  let host: string | null = null
  incoming.forEach((value, name) => {
    if (REQUEST_DROPPED.has(name)) {
      if (name === 'connection') connection = value
      else if (name === 'x-forwarded-for') forwardedFor = value
      else if (name === 'host') host = value
    } else if (name !== 'authorization' || (!dropAuthorization && bearerToken(value) !== null)) {
      // Authorization goes on only as the Bearer key: any other scheme is the site's own (browsers
      // replay HTTP Basic or Digest credentials on every same-origin request, beacons included).
      list.push([name, value])
    }
  })
  const connectionNamed = connectionOptions(connection)
  if (connectionNamed) list = list.filter(([name]) => !connectionNamed.has(name))
  for (const field of forwardingHeaders(forwardedFor, client.address, url.proto, host ?? (url.host || null))) list.push(field)
  list.push(IDENTITY_ONLY)
  return list
}

/**
 * Said, not only left out: with no Accept-Encoding, fetch (Bun's, undici's) asks for gzip, br and
 * zstd itself and inflates what comes back, keeping Content-Encoding (and undici Content-Length):
 * behind a compressing proxy the client got plain bytes labelled gzip. RFC 9110 §12.5.3: a coding
 * not listed is not acceptable, so the answer comes as it is stored.
 */
const IDENTITY_ONLY: [string, string] = ['accept-encoding', 'identity']

/** The token of `Authorization: Bearer <token>`, else null. */
export function bearerToken(authorization: string | null): string | null {
  if (!authorization) return null
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match ? match[1] : null
}

export type KeyInBody = 'auto' | 'always' | 'never'

/** Bodies up to this size are buffered and may carry the key ("auto"); larger ones stream. */
export const KEY_IN_BODY_MAX_BYTES = 64 * 1024

export interface BodyFacts {
  method: string
  /** Content-Length, or null when the body's size is not declared (chunked). */
  contentLength: number | null
  contentEncoding: string | null
  /** `?compression=` of the query: beacons that cannot set Content-Encoding say it there. */
  queryCompression: boolean
  hasBearer: boolean
}

/** Whether the body could take the Bearer key at all, whatever its size: a plain (uncompressed) POST body. */
export function canCarryKey(mode: KeyInBody, body: Omit<BodyFacts, 'contentLength'>): boolean {
  if (mode === 'never' || !body.hasBearer || body.method !== 'POST' || body.queryCompression) return false
  const encoding = body.contentEncoding?.trim().toLowerCase()
  return !encoding || encoding === 'identity'
}

/**
 * Whether to try writing the Bearer key into the body: one that can carry it, of a known size that
 * "auto" can buffer (64 KB); "always" buffers any declared size.
 */
export function shouldMoveKey(mode: KeyInBody, body: BodyFacts): boolean {
  if (!canCarryKey(mode, body) || body.contentLength === null || body.contentLength === 0) return false
  return mode === 'always' || body.contentLength <= KEY_IN_BODY_MAX_BYTES
}

const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const isJsonSpace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d
const encoder = new TextEncoder()
const decoder = new TextDecoder()
const API_KEY_FIELD = encoder.encode('"apiKey"')
const BACKSLASH_U = encoder.encode('\\u')

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  const first = needle[0]
  outer: for (let i = haystack.indexOf(first); i !== -1 && i <= haystack.length - needle.length; i = haystack.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer
    return true
  }
  return false
}

/** Whether a JSON object's text has a top-level `apiKey` (parsed only when the text might). */
function hasTopLevelApiKey(body: Uint8Array): boolean | 'invalid' {
  if (!contains(body, API_KEY_FIELD) && !contains(body, BACKSLASH_U)) return false
  try {
    const value = JSON.parse(decoder.decode(body))
    return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, 'apiKey')
  } catch {
    return 'invalid'
  }
}

/**
 * The body with `"apiKey": <key>` written as the first member of its top-level object, or null
 * when it must stay as it is: not a JSON object, or it already names a key. The rest of the bytes
 * are kept exactly (no parse and re-serialize, which would round large numbers and reorder nothing
 * we want reordered). Invalid JSON that starts like an object is still invalid after the insert, so
 * core answers it exactly as it would have.
 */
export function writeKeyIntoBody(body: Uint8Array, key: string): Uint8Array | null {
  let start = 0
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) start = 3 // UTF-8 byte order mark
  while (start < body.length && isJsonSpace(body[start])) start++
  if (body[start] !== OPEN_BRACE) return null
  const named = hasTopLevelApiKey(body)
  if (named !== false) return null
  let next = start + 1
  while (next < body.length && isJsonSpace(body[next])) next++
  const member = encoder.encode(`"apiKey":${JSON.stringify(key)}${body[next] === CLOSE_BRACE ? '' : ','}`)
  const out = new Uint8Array(body.length - start + member.length)
  out.set(body.subarray(start, start + 1), 0)
  out.set(member, 1)
  out.set(body.subarray(start + 1), 1 + member.length)
  return out
}
