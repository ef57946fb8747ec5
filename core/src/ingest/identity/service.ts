import type { Caller } from '../../http/auth'
import { storedNames, type SessionTouch } from '../sessions/service'
import { sessionTouches } from '../sessions/touch'
import { stripNul, storedText } from '../shared/values'
import type { IdentifyBody } from './model'

/**
 * One identify. `auth` holds the values of the named auth fields when the call is auth-aware; the
 * sink fills in `canonical`, the person this end user turned out to be, inside the commit, so the
 * route reads it once the write has resolved.
 */
export interface IdentifyRow {
  projectId: string
  endUserId: string
  /**
   * Set when the body named a session but no end user: `endUserId` was made here, and is the one
   * identified only if the session has no end user yet; else the session's is (a retried identify,
   * or the next page of the session, must not make another).
   */
  sessionOfMadeId: string | null
  attributes: Record<string, unknown>
  auth: Record<string, unknown> | null
  at: number
  canonical?: string
}

/**
 * Not an identify: a commit that writes by the project's aliases (an error report counts the person
 * of the device among its Issue's affected users, see errorEventsSink) gives the identity sink this
 * row, to hold the project's identity lock shared, taken with the identifies' in one sorted pass (see
 * identityLocks). No alias is then made between its reading them and its commit: one made after it
 * reads the rows it wrote (issuePeopleSink moves them), one made before it is what it reads.
 */
export interface ReadsAliases {
  projectId: string
  readsAliases: true
}

export const readsAliases = (projectId: string): ReadsAliases => ({ projectId, readsAliases: true })

export const isIdentify = (row: IdentifyRow | ReadsAliases): row is IdentifyRow => !('readsAliases' in row)

/**
 * The values of the auth fields, or null when any of them has none: a person is recognised by all the
 * fields the client named, never by a subset of them. Own members only, read and written: `constructor`
 * read through the prototype (a function, which JSON drops) or `__proto__` assigned as a key (which sets
 * the prototype instead) would leave `{}`, which every person's attributes contain. Texts are taken as
 * they are stored, without NUL (see stripNul): one of only NUL is stored empty, and is no value either;
 * nor is one of only whitespace (a form left blank), which would make every such visitor one person.
 * An empty list or object is no value as an empty text is none: `emails: []` from every signed-out
 * visitor would otherwise make them all one person. Fields are named as stored, as the attributes are
 * (see storedNames): several identifies of one end user in a commit are merged in memory.
 */
export function authValues(attributes: Record<string, unknown>, authFields: readonly string[]): Record<string, unknown> | null {
  const fields = [...new Set(authFields.map(storedText))].sort()
  if (fields.length === 0) return null
  const values: [string, unknown][] = []
  for (const field of fields) {
    const sent = Object.hasOwn(attributes, field) ? attributes[field] : undefined
    const value = typeof sent === 'string' ? stripNul(sent) : sent
    if (isEmptyValue(value)) return null
    values.push([field, value])
  }
  return Object.fromEntries(values)
}

function isEmptyValue(value: unknown): boolean {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return true
  return typeof value === 'object' && Object.keys(value).length === 0
}

export function identifyRows(
  body: IdentifyBody,
  authFields: readonly string[] | null,
  caller: Caller,
  now: number,
  newId: () => string,
): { identify: IdentifyRow; sessions: SessionTouch[] } {
  const endUserId = body.userId ?? newId()
  const sessionOfMadeId = body.userId ? null : (body.sessionId ?? null)
  const attributes = storedNames(body.userAttributes ?? {})
  const auth = authFields ? authValues(attributes, authFields) : null
  return {
    identify: { projectId: caller.projectId, endUserId, sessionOfMadeId, attributes, auth, at: now },
    // The end user is written by the identify itself (identitySink), with its attributes.
    sessions: sessionTouches(caller, [{ sessionId: body.sessionId ?? null, endUserId, at: now }]).sessions,
  }
}
