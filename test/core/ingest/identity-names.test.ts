import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { identifyRows } from '@sightline/core/ingest/identity/service'
import { identitySink } from '@sightline/core/ingest/identity/store'
import { sessionsSink } from '@sightline/core/ingest/sessions/store'
import { startCore, type TestCore } from '../../helpers/core'

const attributesOf = async (core: TestCore, endUserId: string) =>
  (await core.database.db.rows<{ attributes: unknown }>(sql`select attributes from end_users where end_user_id = ${endUserId}`))[0]?.attributes

/**
 * Attribute names the database stores as one (NUL dropped, a lone surrogate as U+FFFD: jsonb refuses
 * both) are one attribute when identifies of one end user share a commit too: the one sent last wins,
 * as it does one commit after another.
 */
describe('identify: attribute names as stored', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  /** Identifies as the route makes them, committed together as the writer's group commit does. */
  const inOneCommit = (userId: string, sent: Record<string, unknown>[], authFields: string[] | null = null) => {
    const rows = sent.map((userAttributes, i) =>
      identifyRows({ userId, userAttributes, sessionId: `names-${userId}` }, authFields, { ...core.project, environment: 'development', monthlyLimit: null }, Date.now() + i, randomUUID),
    )
    return core.services.writer.write({
      projectId: core.project.projectId,
      monthlyLimit: null,
      items: rows.length,
      bytes: 100,
      writes: [
        { sink: identitySink, rows: rows.map((r) => r.identify) },
        { sink: sessionsSink, rows: rows.flatMap((r) => r.sessions) },
      ],
    })
  }

  test('a name with NUL in it, between two sends of that name, does not outlast the later one', async () => {
    await inOneCommit('nul', [{ plan: 'free' }, { 'plan\u0000': 'pro' }, { plan: 'team' }])
    expect(await attributesOf(core, 'nul')).toEqual({ plan: 'team' })
  })

  test('a name cut inside an emoji is the name with U+FFFD, and the later send wins', async () => {
    await inOneCommit('cut', [{ 'mood\ufffd': 'a' }, { 'mood\ud83d': 'b' }, { 'mood\ufffd': 'c' }])
    expect(await attributesOf(core, 'cut')).toEqual({ 'mood\ufffd': 'c' })
  })

  test('a name that is an index, sent with NUL first, is overwritten by the later plain one', async () => {
    // Plain objects list index-like names first, whatever order they were set in.
    await inOneCommit('index', [{ '1\u0000': 'a' }, { '1': 'b' }])
    expect(await attributesOf(core, 'index')).toEqual({ '1': 'b' })
  })

  test('an auth field is named as stored too: a NUL in its name finds the attribute', async () => {
    await core.post('/api/ingestion/user/auth', { userId: 'names-first', userAttributes: { email: 'names@shop.test' }, authFields: ['email'] })
    const answer = await core.post('/api/ingestion/user/auth', { userId: 'names-second', userAttributes: { 'email\u0000': 'names@shop.test' }, authFields: ['email'] })
    expect(await answer.json()).toEqual({ success: true, endUserId: 'names-first' })
  })
})
