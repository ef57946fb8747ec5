import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import { isPublicAddress } from '../../http/client-ip'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { endUserAnswer } from '../sessions/touch'
import { commit } from '../shared/write'
import type { ClientLocator } from './locator'
import { IpInfoBody } from './model'
import { addressToLocate, ipInfoRows } from './service'

export function geoRoutes({ ingestion, writer, locator }: { ingestion: IngestionPlugin; writer: Writer; locator: ClientLocator }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/ip-info',
    async ({ body, caller, reply, request, server }) => {
      const geo = await locator.geo(addressToLocate(body.ip, locator.address(request, server), isPublicAddress))
      // A lookup helper, not data of its own: it is not counted against the monthly quota (0 items).
      const rows = ipInfoRows(body, caller, geo, Date.now(), randomUUID)
      await commit(writer, caller, request, 0, touchWrites(rows))
      return reply({ geo, ...endUserAnswer(rows) })
    },
    { body: IpInfoBody },
  )
}
