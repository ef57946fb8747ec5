import { Elysia } from 'elysia'
import type { Logger } from '../log'
import { pathOf } from './routes'

/**
 * One line per request at `info`: method, path (never the query, which may hold a key), status (or
 * `unanswered` when the connection closed first), duration and project. Bodies and headers are never logged. Costs nothing when `info` is off.
 */
export function requestLog(log: Logger) {
  const plugin = new Elysia({ name: 'http/request-log' })
  if (!log.enabled('info')) return plugin
  const started = new WeakMap<Request, number>()
  return plugin
    .onRequest(({ request }) => void started.set(request, performance.now()))
    .onAfterResponse({ as: 'global' }, (context) => {
      const { request, set } = context
      const begin = started.get(request)
      // The connection closed before the answer (a stop's grace period ran out, or the client left
      // while sending): the error its body's read raised made a status no client ever saw, and a
      // 400 would blame the client. Said as unanswered instead.
      const unanswered = request.signal.aborted
      log.info('request', {
        method: request.method,
        path: pathOf(request.url),
        status: unanswered ? undefined : typeof set.status === 'number' ? set.status : 200,
        unanswered: unanswered || undefined,
        ms: begin === undefined ? undefined : Math.round((performance.now() - begin) * 10) / 10,
        project: (context as { caller?: { projectId: string } }).caller?.projectId,
      })
    })
}
