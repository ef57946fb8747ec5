import { QUERY_COMPRESSION, type Relay, type RelaySettings } from '../index.ts'
import { bearerToken, KEY_IN_BODY_MAX_BYTES, shouldMoveKey, upstreamHeaders, writeKeyIntoBody, type HeaderList } from '../headers.ts'
import { FORWARDED_METHODS, isForwardedPath, underPrefix, UNSAFE_HOST } from '../paths.ts'
import type { SocketClient } from '../upstream/socket.ts'
import { CoreAnswer } from './answer.ts'
import type { RequestHead } from './request-parser.ts'
import type { ClientConnection, ClientRequest } from './state.ts'

/**
 * How the standalone server forwards a request. The usual one (the tracker's: a plain path the
 * relay forwards, a body of declared size it reads whole) goes the short way: straight from the
 * parsed head to the socket client, core's answer written back in parts, with no Request or Response
 * made, which is what a request costs a Web server most. Everything else (the script, refusals, a
 * chunked or large body, a target the URL parser would rewrite) is made into a Request and answered by
 * the relay as every adapter's is (web.ts): the rules stay in one place, and the short way applies
 * the same ones (headers.ts, paths.ts) to what it reads off the wire.
 */

export interface Forwarding {
  settings: RelaySettings
  client: SocketClient
  relay: Relay
}

/**
 * A target the WHATWG URL parser (which makes every runtime's `request.url`) would leave as it is:
 * a path of letters, digits, `_`, `-` and `/` (no dot segments, no percent-encoding, no backslash)
 * and a query of characters it does not encode (RFC 3986 query characters minus `"`, `'`, `<`, `>`;
 * the head parser has refused spaces, controls and bytes past ASCII already).
 */
const PLAIN_TARGET = /^\/[\w\-/]*(?:\?[^"#'<>]*)?$/

/** Where a request goes the short way: its path under the prefix and its query, or null for the Web path. */
export function shortWay(forwarding: Forwarding, head: RequestHead): { path: string; search: string } | null {
  if (!FORWARDED_METHODS.has(head.method) || !PLAIN_TARGET.test(head.target)) return null
  // A Host the Web path refuses is refused there (400), not forwarded as X-Forwarded-Host here.
  if (head.host !== null && UNSAFE_HOST.test(head.host)) return null
  if (head.chunked || (head.contentLength ?? 0) > Math.min(KEY_IN_BODY_MAX_BYTES, forwarding.settings.maxBodyBytes)) return null
  // The relay sends no body with other methods; one on the wire is left to the Web path, which reads around it.
  if (head.method !== 'POST' && (head.contentLength ?? 0) > 0) return null
  const query = head.target.indexOf('?')
  const fullPath = query === -1 ? head.target : head.target.slice(0, query)
  const path = underPrefix(fullPath, forwarding.settings.prefix)
  if (path === null || path === forwarding.relay.scriptPath || !isForwardedPath(path)) return null
  return { path, search: query === -1 ? '' : head.target.slice(query) }
}

/** The parsed fields as the header rules read them (`Headers.forEach`'s order of arguments). */
const fieldsOf = (list: HeaderList) => ({
  forEach(visit: (value: string, name: string) => void) {
    for (const [name, value] of list) visit(value, name)
  },
})

function field(list: HeaderList, name: string): string | null {
  for (const [fieldName, value] of list) if (fieldName === name) return value
  return null
}

/** Forwards a request the short way, with its whole body (null when it has none). */
export function forwardShort(forwarding: Forwarding, conn: ClientConnection, request: ClientRequest, way: { path: string; search: string }, body: Uint8Array | null): void {
  const { settings, client } = forwarding
  const { head } = request
  let sent = body && body.byteLength > 0 ? body : null
  let keyMoved = false
  if (sent) {
    const bearer = bearerToken(field(head.headers, 'authorization'))
    const facts = { method: head.method, contentLength: sent.byteLength, contentEncoding: field(head.headers, 'content-encoding'), queryCompression: QUERY_COMPRESSION.test(way.search), hasBearer: bearer !== null }
    const rewritten = shouldMoveKey(settings.mode, facts) ? writeKeyIntoBody(sent, bearer!) : null
    if (rewritten) {
      sent = rewritten
      keyMoved = true
    }
  }
  const answer = new CoreAnswer(conn, request)
  client.forward(
    {
      origin: settings.origin,
      target: settings.basePath + way.path + way.search,
      method: head.method,
      headers: upstreamHeaders(fieldsOf(head.headers), { address: conn.address }, { proto: 'http', host: '' }, keyMoved),
      body: sent,
      contentLength: sent ? sent.byteLength : null,
      // Its signal is read only while the request waits for a connection: a client gone leaves the queue.
      incoming: answer,
      timeoutMs: settings.timeoutMs,
    },
    answer,
  )
}

/** The request's signal, aborted when its client goes away (connection.ts). */
export function abortSignalOf(request: ClientRequest): AbortSignal {
  request.aborter ??= new AbortController()
  return request.aborter.signal
}
