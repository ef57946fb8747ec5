/**
 * Answers the relay gives itself, in WIRE.md's error shape. The codes core uses keep their meaning;
 * the gateway failures and the client gone before the answer are the relay's own.
 */
export type RelayErrorCode =
  | 'bad_request'
  | 'expectation_failed'
  | 'headers_too_large'
  | 'unsupported_transfer_coding'
  | 'http_version_not_supported'
  | 'body_already_read'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'overloaded'
  | 'client_closed_request'

const STATUS: Record<RelayErrorCode, number> = {
  // A request target or Host that is no URL (the Node adapter parses them itself).
  bad_request: 400,
  // The standalone server's own refusals of a request it cannot read (standalone/request-parser.ts):
  // an Expect it cannot meet (RFC 9110 §10.1.1), a head past its limit (RFC 6585 §5), a transfer
  // coding other than chunked (RFC 9112 §6.1), an HTTP version other than 1.0 and 1.1.
  expectation_failed: 417,
  headers_too_large: 431,
  unsupported_transfer_coding: 501,
  http_version_not_supported: 505,
  // The site read the request body before the relay could (a body parser mounted ahead of the Node
  // middleware): a fault of the site's set-up, not of the client nor of core.
  body_already_read: 500,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  // Nobody reads this one: the client has gone. It is what the relay's handler resolves with.
  client_closed_request: 499,
  upstream_unreachable: 502,
  upstream_timeout: 504,
  // Every connection to core is busy and the queue for one full (or waited on past timeoutMs):
  // WIRE.md's code for a full write queue, core never contacted.
  overloaded: 503,
}

export function errorResponse(code: RelayErrorCode, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ success: false, error: { code, message } }), {
    status: STATUS[code],
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  })
}

/** Why an upstream exchange failed, as the transports report it. */
export class UpstreamError extends Error {
  constructor(
    readonly reason: 'refused' | 'timeout' | 'aborted' | 'too_large' | 'overloaded',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}
