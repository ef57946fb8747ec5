import { sql } from 'drizzle-orm'
import type { Orm } from '../../db'
import type { AlreadyStored, Sink, SinkRows } from '../../sink'
import { copyRow, jsonText, timestampText } from '../shared/copy'
import { insertCounted } from '../shared/insert'
import { sortedBy } from '../shared/rows'
import { jsonParam } from '../shared/values'
import type { CustomEventRows, EventRow, SessionEventRow } from './service'

const byUuid = (rows: EventRow[]) => sortedBy(rows, (row) => row.uuid)

/** Stores events; a `uuid` already stored makes the row a no-op, so a retried send is stored once (and counted once). */
function insertEvents(tx: Orm, rows: EventRow[]): Promise<AlreadyStored> {
  return insertCounted(tx, rows, sql`
    insert into events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp)
    select e."projectId", e.uuid, e.environment, e."sessionId", e."endUserId", e."eventName", e.properties, to_timestamp(e.timestamp / 1000.0)
    from jsonb_to_recordset(${jsonParam(byUuid(rows))}::jsonb) as e(
      "projectId" uuid, uuid uuid, environment text, "sessionId" text, "endUserId" text, "eventName" text, properties jsonb, timestamp float8)
    on conflict do nothing`)
}

/** Custom events whose end user the request named (see insertEvents). */
export const eventsSink: Sink<EventRow> = {
  name: 'events',
  singleStatement: true,
  async write(tx, rows) {
    return insertEvents(tx, rows)
  },
  copy: {
    statement: 'copy events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp) from stdin',
    text: (rows) =>
      byUuid(rows)
        .map((e) => copyRow([e.projectId, e.uuid, e.environment, e.sessionId, e.endUserId, e.eventName, jsonText(e.properties), timestampText(e.timestamp)]))
        .join(''),
  },
}

/**
 * Custom events of requests that named no end user: each takes its session's, which
 * sessionEndUserSink decided in this commit (phase `people`, written before this sink's `rows`).
 * Never copied: the writer makes a COPY's text before any sink of the commit has run, when these
 * end users are not known yet.
 */
export const sessionEventsSink: Sink<SessionEventRow> = {
  name: 'events_of_session_end_user',
  singleStatement: true,
  async write(tx, rows) {
    const events = rows.map(({ event, ofSession }) => {
      // A fault of the code, failing its request alone (see faultOf), rather than an event stored without its end user.
      if (ofSession.endUserId === undefined) throw new TypeError(`no end user was decided for session ${ofSession.sessionId}`)
      return { ...event, endUserId: ofSession.endUserId }
    })
    return insertEvents(tx, events)
  },
}

/** A request's events, to the sink that stores them as its end user is known (see CustomEventRows). */
export const eventWrites = (rows: CustomEventRows): SinkRows[] =>
  rows.ofSession ? [{ sink: sessionEventsSink, rows: rows.eventsOfSession }] : [{ sink: eventsSink, rows: rows.events }]
