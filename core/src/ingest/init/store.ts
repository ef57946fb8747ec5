import type { Sink } from '../../writer'
import { sessionKey } from '../sessions/service'
import { endUsersSink, sessionEndUsers } from '../sessions/store'
import type { SessionEndUserTouch } from './service'

/**
 * The end users of inits that named none: each session's, read after the sessions sink wrote the
 * session (see sessionEndUsers), which keeps an end user it has and takes the made one otherwise.
 * Named to sort after `sessions`, so that its read goes out behind the sessions sink's write. The
 * made end user is stored only when its session took it: no init leaves one the session does not have.
 */
export const initEndUserSink: Sink<SessionEndUserTouch> = {
  name: 'sessions_init_end_user',
  async write(tx, rows) {
    const ofSessions = await sessionEndUsers(tx, rows.map((r) => ({ projectId: r.made.projectId, sessionId: r.sessionId })))
    const touches = rows.map((row) => {
      row.endUserId = ofSessions.get(sessionKey({ projectId: row.made.projectId, sessionId: row.sessionId }))?.endUserId ?? row.made.endUserId
      return { ...row.made, endUserId: row.endUserId }
    })
    await endUsersSink.write(tx, touches)
  },
}
