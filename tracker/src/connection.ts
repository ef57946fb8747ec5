import { API } from './config'
import type { Messages } from './messages'
import type { Transport } from './transport'
import type { Clock, ConnectionTest } from './types'
import { SDK_VERSION } from './version'

/**
 * `testConnection()`: one call of the (deprecated) init endpoint, its only caller, and what happened.
 * A module of its own, loaded when asked: a page that never tests its connection never loads it.
 */
export async function testConnection(transport: Transport, messages: Messages, clock: Clock, ingestionUrl: string): Promise<ConnectionTest> {
  const start = clock.now()
  const { sessionId, endUserId } = messages.owner(false)
  const answer = await transport.post(API + '/init', { sessionId, endUserId, entryURL: messages.here(), referrer: messages.referrer, sdkVersion: SDK_VERSION })
  const blocked = transport.blocked || (answer.status === 0 && transport.online() && (await transport.reachable()))
  return { ok: answer.status === 200, status: answer.status, latencyMs: clock.now() - start, ingestionUrl, blocked }
}
