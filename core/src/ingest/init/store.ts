import type { Sink } from '../../sink'
import { sessionKey } from '../sessions/service'
import { endUsersSink, sessionEndUsers } from '../sessions/store'
import type { SessionEndUserTouch } from './service'

/**
 * The end users of inits that named none: each session's, read after the sessions sink wrote the
 * session (see sessionEndUsers), which keeps an end user it has and takes the made one otherwise.
 * The made end user is stored only when its session took it: no init leaves one the session does not
 * have. They are handed to the end-user sink, which writes the commit's end users in one statement.
 */
export const initEndUserSink: Sink<SessionEndUserTouch> = {
  name: 'sessions_init_end_user',
  phase: 'people',
  feeds: [endUsersSink],
  async write(tx, rows, hand) {
    const ofSessions = await sessionEndUsers(tx, rows.map((r) => ({ projectId: r.made.projectId, sessionId: r.sessionId })))
    const touches = rows.map((row) => {
      row.endUserId = ofSessions.get(sessionKey({ projectId: row.made.projectId, sessionId: row.sessionId }))?.endUserId ?? row.made.endUserId
      return { ...row.made, endUserId: row.endUserId }
    })
    hand!(endUsersSink, touches)
  },
}
