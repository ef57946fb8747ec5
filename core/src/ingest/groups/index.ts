import { Elysia } from 'elysia'
import type { Writer } from '../../writer'
import type { IngestionPlugin } from '../plugin'
import { endUsersSink, sessionsSink } from '../sessions/store'
import { requestBytes } from '../shared/values'
import { GroupIdentifyBody } from './model'
import { groupIdentifyRows } from './service'
import { groupMembersSink, groupsSink } from './store'

export function groupRoutes({ ingestion, writer }: { ingestion: IngestionPlugin; writer: Writer }) {
  return new Elysia({ prefix: '/api/ingestion' }).use(ingestion).post(
    '/groupidentify',
    async ({ body, caller, reply, request }) => {
      const rows = groupIdentifyRows(body, caller, Date.now())
      await writer.write({
        projectId: caller.projectId,
        monthlyLimit: caller.monthlyLimit,
        items: 1,
        bytes: requestBytes(request),
        writes: [
          { sink: groupsSink, rows: rows.groups },
          { sink: groupMembersSink, rows: rows.members },
          { sink: sessionsSink, rows: rows.sessions },
          { sink: endUsersSink, rows: rows.endUsers },
        ],
      })
      return reply({})
    },
    { body: GroupIdentifyBody },
  )
}
