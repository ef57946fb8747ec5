import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { sendUserAuth, UserAuthError } from '@sightline/tracker/user-auth'
import { startCore, type TestCore } from '../helpers/core'

// Against a real core over HTTP: the low-level call SPEC.md names for /user/auth.
let core: TestCore
let url: string
beforeAll(async () => {
  core = await startCore()
  url = await core.listen()
})
afterAll(() => core.close())

const signIn = (userId: string, email: string) =>
  sendUserAuth({ ingestionUrl: url, apiKey: core.key, userId, sessionId: `${userId}-session`, userAttributes: { email }, authFields: ['email'] })

describe('sendUserAuth', () => {
  test('resolves with the canonical endUserId: the first device is the person, the second its alias', async () => {
    expect(await signIn('laptop-1', 'ada@auth.test')).toBe('laptop-1')
    expect(await signIn('phone-1', 'ada@auth.test')).toBe('laptop-1')
    const aliases = await core.database.db.rows<{ alias_id: string; end_user_id: string }>(
      sql`select alias_id, end_user_id from end_user_aliases where project_id = ${core.project.projectId} and alias_id = 'phone-1'`,
    )
    expect(aliases).toEqual([{ alias_id: 'phone-1', end_user_id: 'laptop-1' }])
  })

  test('takes the ingestion URL as getConnectionStatus() gives it, with or without a trailing slash', async () => {
    const answer = await sendUserAuth({ ingestionUrl: `${url}/`, apiKey: core.key, userId: 'tablet-1', sessionId: 's', userAttributes: { email: 'ada@auth.test' }, authFields: ['email'] })
    expect(answer).toBe('laptop-1')
  })

  test("a refusal rejects with the service's error code, message and status", async () => {
    const refused = await sendUserAuth({ ingestionUrl: url, apiKey: 'sl_live_not-a-key', userId: 'x', sessionId: 's', userAttributes: {}, authFields: [] }).catch((error) => error)
    expect(refused).toBeInstanceOf(UserAuthError)
    expect(refused).toMatchObject({ status: 401, code: 'invalid_api_key' })
    const invalid = await sendUserAuth({ ingestionUrl: url, apiKey: core.key, userId: 'has space', sessionId: 's', userAttributes: {}, authFields: [] }).catch((error) => error)
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' })
  })

  test("on a page whose arrays serialize themselves (Prototype.js's Array.prototype.toJSON), authFields and list attributes go as arrays", async () => {
    const proto = Array.prototype as unknown as { toJSON?: () => string }
    // As Prototype.js writes it: the array's JSON, as a string.
    proto.toJSON = function (this: unknown[]) {
      return `[${this.map((item) => JSON.stringify(item)).join(', ')}]`
    }
    // The page's toJSON goes once the request is made: core runs in this process, and its own JSON would meet it.
    const sent = (input: RequestInfo | URL, init?: RequestInit) => {
      delete proto.toJSON
      return fetch(input, init)
    }
    try {
      const answer = await sendUserAuth({ ingestionUrl: url, apiKey: core.key, userId: 'proto-1', sessionId: 's', userAttributes: { email: 'proto@auth.test', roles: ['admin', 'billing'] }, authFields: ['email'], fetch: sent })
      expect(answer).toBe('proto-1')
    } finally {
      delete proto.toJSON
    }
    const [user] = await core.database.db.rows<{ attributes: { roles: unknown } }>(sql`select attributes from end_users where end_user_id = 'proto-1'`)
    expect(user.attributes.roles).toEqual(['admin', 'billing'])
  })

  test('what is not an answer of the service (a proxy page) rejects, never resolves with a made-up id', async () => {
    const proxyPage = async () => new Response('<html>bad gateway</html>', { status: 502 })
    const failed = await sendUserAuth({ ingestionUrl: url, apiKey: core.key, userId: 'x', sessionId: 's', userAttributes: {}, authFields: [], fetch: proxyPage }).catch((error) => error)
    expect(failed).toMatchObject({ status: 502, code: 'unexpected_answer' })
  })
})
