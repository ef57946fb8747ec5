/** The one table from error to HTTP status (WIRE.md, "Errors"). */
export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  invalid_secret: 401,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_encoding: 415,
  monthly_limit_reached: 429,
  internal_error: 500,
  storage_unavailable: 503,
  overloaded: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface ApiErrorDetails {
  /** JSON pointer of the failing field, for validation failures. */
  path?: string
  /** Seconds the client should wait before retrying; sent as `Retry-After`. */
  retryAfterSeconds?: number
  /** Extra top-level members of the error body, e.g. `monthlyLimitReached`. */
  body?: Record<string, unknown>
  /** Extra response headers, e.g. `Allow` on a 405. */
  headers?: Record<string, string>
}

/** The one error type of core. Anything else that escapes a handler is a bug and becomes a 500. */
export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ApiErrorDetails = {},
  ) {
    super(message)
    this.status = ERROR_STATUS[code]
  }
}

export function errorBody(error: ApiError): Record<string, unknown> {
  return {
    success: false,
    error: { code: error.code, message: error.message },
    ...(error.details.path !== undefined && { path: error.details.path }),
    ...error.details.body,
  }
}
