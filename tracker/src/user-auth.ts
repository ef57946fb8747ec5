import { API } from './config'
import { json } from './storage'
import type { FetchFunction } from './types'

/**
 * `sendUserAuth`: the low-level call of `POST /api/ingestion/user/auth`, identify aware of auth
 * fields (SPEC.md: the tracker has no `auth()` helper of its own). A module of its own, outside the
 * tracker's bundle: an app that signs users in imports it where it does, and pages that do not pay
 * nothing for it.
 */

export interface UserAuth {
  /** Where the tracker sends: `getConnectionStatus().ingestionUrl`. */
  ingestionUrl: string
  /** The project key the tracker was given. */
  apiKey: string
  /** This browser's end user: `getUserInfo().endUserId`. */
  userId: string
  /** `getUserInfo().sessionId`. */
  sessionId: string
  userAttributes: Record<string, unknown>
  /** The attributes that name a person across devices (e.g. `['email']`). */
  authFields: string[]
  /** The page's fetch by default. */
  fetch?: FetchFunction
}

/** The service's refusal of a `sendUserAuth`: WIRE.md's error code and message, and the status. */
export class UserAuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'UserAuthError'
  }
}

/**
 * Sends the identify and resolves with the canonical `endUserId`: the person of the project whose
 * `authFields` have the same values (this end user is then its alias, and what it sends is theirs),
 * or this end user's own id. The tracker goes on sending as `userId`; the service resolves the alias.
 * Rejects with a `UserAuthError` when the service refuses, and with the fetch's error when it cannot
 * be reached: the caller decides whether to retry (the call is idempotent).
 */
export async function sendUserAuth({ ingestionUrl, apiKey, userId, sessionId, userAttributes, authFields, fetch = globalThis.fetch }: UserAuth): Promise<string> {
  const response = await fetch(`${ingestionUrl.replace(/\/+$/, '')}${API}/user/auth`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: json({ userId, userAttributes, sessionId, authFields }),
  })
  const answer = (await response.json().catch(() => null)) as { endUserId?: string; error?: { code?: string; message?: string } } | null
  if (response.ok && typeof answer?.endUserId === 'string') return answer.endUserId
  throw new UserAuthError(response.status, answer?.error?.code ?? 'unexpected_answer', answer?.error?.message ?? `the service answered ${response.status}`)
}
