import type { Sink } from '../../sink'
import { sessionKey } from '../sessions/service'
import { endUsersSink, sessionEndUsers } from '../sessions/store'
import type { Geo } from './service'

/** Where the client of an `/ip-info` that named a session but no end user is, for that session's end user. */
export interface SessionGeo {
  projectId: string
  sessionId: string
  geo: Geo
  at: number
}

/**
 * The end user of each session named without one: located as if the body had named it (WIRE.md: the
 * result is stored on the session and end user). Read once the sessions sink wrote the session (see
 * sessionEndUsers); a session without an end user gets none made for it, and nothing is located.
 */
export const sessionEndUserGeoSink: Sink<SessionGeo> = {
  name: 'sessions_geo_end_user',
  phase: 'people',
  feeds: [endUsersSink],
  async write(tx, rows, hand) {
    const ofSessions = await sessionEndUsers(tx, rows)
    hand!(
      endUsersSink,
      rows.flatMap((row) => {
        const endUserId = ofSessions.get(sessionKey(row))?.endUserId
        return endUserId ? [{ projectId: row.projectId, endUserId, at: row.at, geo: row.geo }] : []
      }),
    )
  },
}
