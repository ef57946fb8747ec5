import type { Caller } from '../../http/auth'
import { firstSeenOf, firstWindows, type EndUserTouch, type SessionTouch } from './service'

/** One item of a request seen in a session (a log line, an error report, a heartbeat...). */
export interface Sighting {
  /** Null for an item outside any session: it touches its end user only. */
  sessionId: string | null
  endUserId: string | null
  /** Epoch ms. */
  at: number
  windowId?: string
}

/**
 * What one request tells about its sessions and end users, for the shared sessions and end-users
 * sinks (see `touchWrites`): sessions and end users are created by the first request that names
 * them, whichever route it is. The rows of a feature extend this.
 */
export interface SessionTouches {
  sessions: SessionTouch[]
  endUsers: EndUserTouch[]
  /** Set when the request named no end user: its end user is its session's (sessionEndUserSink). */
  ofSession?: SessionEndUserTouch | null
  /**
   * Every session of a batch with items naming no end user (ofSession among them, when it is one):
   * each is decided like ofSession, see sessionTouches.
   */
  ofSessions?: SessionEndUserTouch[]
}

/**
 * The end user of a request that named none (WIRE.md: the server makes one and returns it). `made` was
 * made for the request and is the one the session gets only if it has none yet; else the session's is
 * touched and answered (a retry, the next page of the session, or another request of it at the same
 * time must not make another). The sink fills in `endUserId` inside the commit, so the route (and the
 * rows that carry it, see sessionEventsSink) read it once the write has resolved.
 */
export interface SessionEndUserTouch {
  sessionId: string
  made: EndUserTouch
  endUserId?: string
}

/**
 * The end-user touches of a request about one session, whose session touch carries `endUser`: that
 * one when the body named it, else its session's, `endUser` being the one made for it.
 */
export function endUserTouches(sessionId: string, named: boolean, endUser: EndUserTouch): Pick<SessionTouches, 'endUsers' | 'ofSession'> {
  return named ? { endUsers: [endUser], ofSession: null } : { endUsers: [], ofSession: { sessionId, made: endUser } }
}

/**
 * The touches of the items of one request, one per session and one per end user. With `made`, an
 * item of a session naming no end user is its session's end user's (WIRE.md: the server makes one
 * and returns it), decided in the commit (ofSessions, see SessionEndUserTouch): `made.newEndUserId`
 * makes the one a session gets if it has none, `made.answered` is the session whose end user the
 * answer gives (ofSession). Items outside any session that name none stay without one.
 */
export function sessionTouches(caller: Caller, sightings: readonly Sighting[], made?: { newEndUserId: () => string; answered: string | null }): SessionTouches {
  const sessions = new Map<string, SessionTouch>()
  const endUsers = new Map<string, EndUserTouch>()
  const ofSessions = new Map<string, SessionEndUserTouch>()
  for (const { sessionId, endUserId, at, windowId } of sightings) {
    if (made && !endUserId && sessionId !== null) {
      const of = ofSessions.get(sessionId)
      if (!of) ofSessions.set(sessionId, { sessionId, made: { projectId: caller.projectId, endUserId: made.newEndUserId(), at } })
      else {
        of.made.firstAt = Math.min(firstSeenOf(of.made), at)
        of.made.at = Math.max(of.made.at, at)
      }
    }
    const seen = sessionId === null ? undefined : sessions.get(sessionId)
    if (seen) {
      seen.firstAt = Math.min(seen.firstAt, at)
      seen.lastAt = Math.max(seen.lastAt, at)
      seen.endUserId ??= endUserId
      if (windowId && !seen.windowIds?.includes(windowId)) seen.windowIds = firstWindows(seen.windowIds, [windowId])
    } else if (sessionId !== null) {
      sessions.set(sessionId, {
        projectId: caller.projectId,
        sessionId,
        environment: caller.environment,
        endUserId,
        firstAt: at,
        lastAt: at,
        ...(windowId && { windowIds: [windowId] }),
      })
    }
    if (endUserId) {
      const user = endUsers.get(endUserId)
      if (!user) endUsers.set(endUserId, { projectId: caller.projectId, endUserId, at })
      else {
        user.firstAt = Math.min(firstSeenOf(user), at)
        user.at = Math.max(user.at, at)
      }
    }
  }
  // A session named without an end user gets the made one, unless another item named its end user.
  for (const [sessionId, of] of ofSessions) sessions.get(sessionId)!.endUserId ??= of.made.endUserId
  if (ofSessions.size === 0) return { sessions: [...sessions.values()], endUsers: [...endUsers.values()] }
  const answered = made?.answered == null ? null : (ofSessions.get(made.answered) ?? null)
  return { sessions: [...sessions.values()], endUsers: [...endUsers.values()], ofSession: answered, ofSessions: [...ofSessions.values()] }
}

/** A row of an item that may be its session's end user's (see sessionTouches), the commit deciding which. */
export interface OfSessionRow {
  sessionId: string | null
  endUserId: string | null
  ofSession?: SessionEndUserTouch
}

/** `rows` with the touch deciding the end user of those that named none, where their session has one. */
export function ofSessionRows<Row extends OfSessionRow>(rows: Row[], touches: SessionTouches): Row[] {
  if (!touches.ofSessions) return rows
  const bySession = new Map(touches.ofSessions.map((of) => [of.sessionId, of]))
  for (const row of rows) if (row.endUserId === null && row.sessionId !== null) row.ofSession = bySession.get(row.sessionId)
  return rows
}

/**
 * A row as stored, once the commit decided its session's end user (sinks of the rows phase, after
 * sessionEndUserSink), without the touch.
 */
export function storedRow<Row extends OfSessionRow>({ ofSession, ...row }: Row): Omit<Row, 'ofSession'> {
  if (!ofSession) return row
  // A fault of the code, failing its request alone (see faultOf), rather than a row stored without its end user.
  if (ofSession.endUserId === undefined) throw new TypeError(`no end user was decided for session ${ofSession.sessionId}`)
  return { ...row, endUserId: ofSession.endUserId }
}

/**
 * What a route's answer adds about the end user, once the request is committed: the one decided for
 * a request that named none (WIRE.md: the server makes one and returns it); nothing for one that
 * named it, whose answer stays byte for byte what fielded clients compare it with.
 */
export const endUserAnswer = (touches: SessionTouches): { endUserId?: string } => (touches.ofSession ? { endUserId: touches.ofSession.endUserId } : {})
