import { Elysia } from 'elysia'
import { isPublicAddress } from '../../http/client-ip'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { endUsersSink, sessionsSink } from '../sessions/store'
import { commit } from '../shared/write'
import type { ClientLocator } from './locator'
import { IpInfoBody } from './model'
import { addressToLocate } from './service'

export function geoRoutes({ ingestion, writer, locator }: { ingestion: IngestionPlugin; writer: Writer; locator: ClientLocator }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/ip-info',
    async ({ body, caller, reply, request, server }) => {
      const now = Date.now()
      const geo = locator.geo(addressToLocate(body.ip, locator.address(request, server), isPublicAddress))
      const endUserId = body.endUserId ?? null
      // A lookup helper, not data of its own: it is not counted against the monthly quota (0 items).
      await commit(writer, caller, request, 0, [
        {
          sink: sessionsSink,
          rows: [{ projectId: caller.projectId, sessionId: body.sessionId, environment: caller.environment, endUserId, firstAt: now, lastAt: now, geo }],
        },
        { sink: endUsersSink, rows: endUserId ? [{ projectId: caller.projectId, endUserId, at: now, geo }] : [] },
      ])
      return reply({ geo })
    },
    { body: IpInfoBody },
  )
}
