import type { ValueError } from '@sinclair/typebox/errors'
import { Elysia, mapValueError } from 'elysia'
import { errorText } from '../db'
import { ApiError, errorBody } from '../errors'
import { mostSpecific } from '../ingest/shared/validate'
import type { Logger } from '../log'
import { pathOf, type RouteTable } from './routes'

interface ElysiaValidationError {
  /** The first error TypeBox found, with the errors of each variant when it is a union's. */
  valueError?: ValueError
  all?: { path?: string; summary?: string; message?: string }[]
}

/** Turns whatever a handler threw into an ApiError; Elysia's own errors map onto WIRE.md codes. */
export function toApiError(code: string | number, error: unknown, request: Request, routes: RouteTable): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof Error && error.cause instanceof ApiError) return error.cause
  switch (code) {
    case 'VALIDATION': {
      // Elysia names the first error, which for a value-or-null field is the union's at the field;
      // the deepest variant's says what inside the value is wrong, as handler validation does.
      const validation = error as ElysiaValidationError
      const first = mapValueError(mostSpecific(validation.valueError)) ?? validation.all?.[0]
      const path = first?.path || '/'
      return new ApiError('validation_failed', `${path}: ${first?.summary ?? first?.message ?? 'invalid value'}`, { path })
    }
    case 'PARSE':
      return new ApiError('invalid_json', 'the body is not valid JSON')
    case 'NOT_FOUND':
      return unserved(request.method, pathOf(request.url), routes)
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
 * Where an error was thrown, without its message: a stack begins with the message, and a failed
 * query's message holds its parameters (what a request sent: emails, properties, megabytes of them).
 * The message is logged as errorText gives it, one line, the query's cause instead of the query.
 */
export function stackFrames(error: unknown): string | undefined {
  const stack = error instanceof Error ? error.stack : undefined
  const first = stack?.indexOf('\n    at ') ?? -1
  return first === -1 ? undefined : stack!.slice(first + 1)
}

/**
 * Every failure answers in WIRE.md's shape. Stack traces are logged, never sent. `failed` is told of
 * each failed request first (to give back what it held: the body budget, see bodyParser): Elysia
 * runs error hooks in the order they were added until one answers, and this one, added first so
 * that it answers for every route, always answers.
 */
export function errorHandler(log: Logger, routes: () => RouteTable, failed?: (request: Request) => void) {
  return new Elysia({ name: 'http/errors' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    failed?.(request)
    const apiError = toApiError(code, error, request, routes())
    // An ApiError of its own was logged where it was decided, with what caused it.
    if (apiError.code === 'internal_error' && !(error instanceof ApiError)) {
      log.error('unhandled error', { path: pathOf(request.url), error: errorText(error), stack: stackFrames(error) })
    }
    set.status = apiError.status
    if (apiError.details.retryAfterSeconds !== undefined) set.headers['retry-after'] = String(apiError.details.retryAfterSeconds)
    Object.assign(set.headers, apiError.details.headers)
    return errorBody(apiError)
  })
}

/**
 * For Bun's server, an error that escaped Elysia's handling (its error hook failing): answered in
 * WIRE.md's shape and logged. Without it Bun answers with a page of source code and stack.
 */
export function escapedErrorHandler(log: Logger) {
  return (error: unknown): Response => {
    log.error('unhandled error', { error: errorText(error), stack: stackFrames(error) })
    return Response.json(errorBody(new ApiError('internal_error', 'internal error')), { status: 500 })
  }
}
