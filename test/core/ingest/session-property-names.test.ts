import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { SessionTouch } from '@sightline/core/ingest/sessions/service'
import { sessionsSink } from '@sightline/core/ingest/sessions/store'
import { startCore, type TestCore } from '../../helpers/core'

/**
 * automaticProperties names the database stores as one (NUL dropped, a lone surrogate as U+FFFD) are
 * one property when requests of one session share a commit too: the one sent last wins, as it does
 * one commit after another.
 */
describe('session automaticProperties: names as stored', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const propertiesAfterOneCommit = async (sessionId: string, sent: Record<string, unknown>[]) => {
    const at = Date.now()
    const touches: SessionTouch[] = sent.map((automaticProperties, i) => ({
      projectId: core.project.projectId,
      sessionId,
      environment: 'development',
      endUserId: null,
      firstAt: at + i,
      lastAt: at + i,
      automaticProperties,
    }))
    await core.services.writer.write({ projectId: core.project.projectId, monthlyLimit: null, items: touches.length, bytes: 100, writes: [{ sink: sessionsSink, rows: touches }] })
    const [row] = await core.database.db.rows<{ automatic_properties: unknown }>(sql`select automatic_properties from sessions where session_id = ${sessionId}`)
    return row?.automatic_properties
  }

  test('a name with NUL in it, between two sends of that name, does not outlast the later one', async () => {
    expect(await propertiesAfterOneCommit('props-nul', [{ language: 'de' }, { 'language\u0000': 'fr' }, { language: 'en' }])).toEqual({ language: 'en' })
  })

  test('a name cut inside an emoji is the name with U+FFFD, and the later send wins', async () => {
    expect(await propertiesAfterOneCommit('props-cut', [{ 'tag\ufffd': 'a' }, { 'tag\ud83d': 'b' }, { 'tag\ufffd': 'c' }])).toEqual({ 'tag\ufffd': 'c' })
  })
})
