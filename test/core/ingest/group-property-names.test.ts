import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { groupIdentifyRows } from '@sightline/core/ingest/groups/service'
import { groupsSink } from '@sightline/core/ingest/groups/store'
import { startCore, type TestCore } from '../../helpers/core'

/**
 * Property names the database stores as one (NUL dropped, a lone surrogate as U+FFFD: jsonb refuses
 * both) are one property when group identifies of one group share a commit too: the one sent last
 * wins, as it does one commit after another, and as identify's attributes do (identity-names.test.ts).
 */
describe('groupidentify: property names as stored', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  const propertiesOf = async (groupKey: string) =>
    (await core.database.db.rows<{ properties: unknown }>(sql`select properties from groups where group_key = ${groupKey}`))[0]?.properties

  /** Group identifies as the route makes them, committed together as the writer's group commit does. */
  const inOneCommit = (groupKey: string, sent: Record<string, unknown>[]) => {
    const caller = { ...core.project, environment: 'development', monthlyLimit: null }
    const rows = sent.map((groupProperties, i) => groupIdentifyRows({ groupType: 'company', groupKey, groupProperties }, caller, Date.now() + i))
    return core.services.writer.write({
      projectId: core.project.projectId,
      monthlyLimit: null,
      items: rows.length,
      bytes: 100,
      writes: [{ sink: groupsSink, rows: rows.flatMap((r) => r.groups) }],
    })
  }

  test('a name with NUL in it, between two sends of that name, does not outlast the later one', async () => {
    await inOneCommit('nul', [{ plan: 'free' }, { 'plan\u0000': 'pro' }, { plan: 'team' }])
    expect(await propertiesOf('nul')).toEqual({ plan: 'team' })
  })

  test('a name cut inside an emoji is the name with U+FFFD, and the later send wins', async () => {
    await inOneCommit('cut', [{ 'mood\ufffd': 'a' }, { 'mood\ud83d': 'b' }, { 'mood\ufffd': 'c' }])
    expect(await propertiesOf('cut')).toEqual({ 'mood\ufffd': 'c' })
  })

  test('over HTTP, one after another: the later send wins as well', async () => {
    for (const groupProperties of [{ tier: 'free' }, { 'tier\u0000': 'pro' }, { tier: 'team' }]) {
      expect((await core.post('/api/ingestion/groupidentify', { groupType: 'company', groupKey: 'http', groupProperties })).status).toBe(200)
    }
    expect(await propertiesOf('http')).toEqual({ tier: 'team' })
  })
})
