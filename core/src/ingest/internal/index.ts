import { Elysia } from 'elysia'
import type { Database } from '../../db'
import { ApiError } from '../../errors'
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

/** Routes for the operator's own tools, guarded by a shared secret instead of a project key. */
export function internalRoutes({ secret, writer, db, log }: InternalDeps) {
  const routes = new Elysia({ prefix: '/api/internal' })
  if (!secret) return routes
  return routes
    .derive(({ headers }) => {
      // Before the body is validated: a caller without the secret learns nothing about the schema.
      assertSecret(presentedSecret(headers.authorization, headers['x-internal-secret']), secret)
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
