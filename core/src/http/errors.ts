import { Elysia } from 'elysia'
import { ApiError, errorBody } from '../errors'
import type { Logger } from '../log'
import type { RouteTable } from './routes'

interface ElysiaValidationError {
  all?: { path?: string; summary?: string; message?: string }[]
}

/** Turns whatever a handler threw into an ApiError; Elysia's own errors map onto WIRE.md codes. */
export function toApiError(code: string | number, error: unknown, request: Request, routes: RouteTable): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof Error && error.cause instanceof ApiError) return error.cause
  switch (code) {
    case 'VALIDATION': {
      const first = (error as ElysiaValidationError).all?.[0]
      const path = first?.path || '/'
      return new ApiError('validation_failed', `${path}: ${first?.summary ?? first?.message ?? 'invalid value'}`, { path })
    }
    case 'PARSE':
      return new ApiError('invalid_json', 'the body is not valid JSON')
    case 'NOT_FOUND':
      return unserved(request.method, new URL(request.url).pathname, routes)
    default:
      return new ApiError('internal_error', 'internal error')
  }
}

/** A request no route serves: 405 with `Allow` (exactly the methods served) on a known path, else 404. */
export function unserved(method: string, path: string, routes: RouteTable): ApiError {
  const methods = routes.get(path)
  if (methods) return new ApiError('method_not_allowed', `${method} is not allowed on ${path}`, { headers: { allow: methods.join(', ') } })
  return new ApiError('not_found', `no route for ${path}`)
}

/**
 * Every failure answers in WIRE.md's shape. Stack traces are logged, never sent.
 */
export function errorHandler(log: Logger, routes: () => RouteTable) {
  return new Elysia({ name: 'http/errors' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const apiError = toApiError(code, error, request, routes())
    // An ApiError of its own was logged where it was decided, with what caused it.
    if (apiError.code === 'internal_error' && !(error instanceof ApiError)) {
      log.error('unhandled error', { path: new URL(request.url).pathname, error: String((error as Error)?.stack ?? error) })
    }
    set.status = apiError.status
    if (apiError.details.retryAfterSeconds !== undefined) set.headers['retry-after'] = String(apiError.details.retryAfterSeconds)
    Object.assign(set.headers, apiError.details.headers)
    return errorBody(apiError)
  })
}
