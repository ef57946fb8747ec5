import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { touchWrites } from '../sessions/store'
import { commit } from '../shared/write'
import { GroupIdentifyBody } from './model'
import { groupIdentifyRows } from './service'
import { groupsSink } from './store'

export function groupRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/groupidentify',
    async ({ body, caller, reply, request }) => {
      const rows = groupIdentifyRows(body, caller, Date.now())
      await commit(writer, caller, request, 1, [
        { sink: groupsSink, rows: rows.groups },
        ...touchWrites(rows),
      ])
      return reply({})
    },
    { body: GroupIdentifyBody },
  )
}
