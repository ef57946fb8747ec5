import { Elysia } from 'elysia'
import type { Database } from '../../db'
import { ApiError } from '../../errors'
import type { BodyReader } from '../../http/body'
import { parseJson } from '../../http/json'
import type { Logger } from '../../log'
import { findProject } from '../../projects/store'
import type { Writer } from '../../writer'
import { readOrUnavailable, requestBytes } from '../shared/write'
import { ScanFindingsBody } from './model'
import { assertSecret, findingRows, presentedSecret } from './service'
import { scanFindingsSink } from './store'

interface InternalDeps {
  /** INTERNAL_SECRET; unset, the routes do not exist (404). */
  secret: string | undefined
  writer: Writer
  db: Database
  log: Logger
}

const PREFIX = '/api/internal'

const checkSecret = (secret: string, headers: { get(name: string): string | null }) =>
  assertSecret(presentedSecret(headers.get('authorization') ?? undefined, headers.get('x-internal-secret') ?? undefined), secret)

/**
 * The body parser's reader for the internal route: a caller without the secret is refused before its
 * body is read, so it learns nothing of the schema or the limits (400, 413, 415) and costs no parse.
 * `createApp` hands this to the body parser.
 */
export function internalBodyReaders(secret: string | undefined): Record<string, BodyReader> {
  if (!secret) return {}
  return {
    [`${PREFIX}/scan-findings`]: async (body, request) => {
      checkSecret(secret, request.headers)
      return parseJson(body.decode(await body.read()))
    },
  }
}

/** Routes for the operator's own tools, guarded by a shared secret instead of a project key. */
export function internalRoutes({ secret, writer, db, log }: InternalDeps) {
  const routes = new Elysia({ prefix: PREFIX })
  if (!secret) return routes
  return routes
    .derive(({ request }) => {
      // Checked again for a request whose body was not read by `internalBodyReaders` (none sent).
      checkSecret(secret, request.headers)
      return {}
    })
    .post(
      '/scan-findings',
      async ({ body, request }) => {
        const project = await readOrUnavailable(findProject(db.orm, body.projectId.toLowerCase()), log)
        if (!project) throw new ApiError('validation_failed', `/projectId: no project ${body.projectId}`, { path: '/projectId' })
        const rows = findingRows(body)
        if (rows.length > 0) {
          await writer.write({
            projectId: project.projectId,
            // Not the project's traffic: nothing is counted against its monthly limit.
            monthlyLimit: null,
            items: 0,
            bytes: requestBytes(request),
            writes: [{ sink: scanFindingsSink, rows }],
          })
        }
        return { success: true as const, accepted: rows.length }
      },
      { body: ScanFindingsBody },
    )
}
