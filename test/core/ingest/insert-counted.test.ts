import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { EventRow } from '@sightline/core/ingest/events/service'
import { eventsSink } from '@sightline/core/ingest/events/store'
import { createProject } from '@sightline/core/projects/service'
import { createTestDatabase, type TestDatabase } from '../../helpers/database'

/**
 * What a counted sink says was stored already (resends), which the quota takes back: read from the
 * statement's row count when a commit holds one project's rows, per project from the rows it
 * returns when it holds several. Both ways, on both engines.
 */
let database: TestDatabase
let projects: string[]
beforeAll(async () => {
  database = await createTestDatabase()
  projects = await Promise.all(['a', 'b'].map(async (name) => (await createProject(database.db.orm, { name, monthlyLimit: null })).projectId))
})
afterAll(() => database.close())

const event = (projectId: string, uuid = crypto.randomUUID()): EventRow => ({
  projectId,
  uuid,
  environment: 'production',
  sessionId: 's',
  endUserId: null,
  eventName: 'checkout',
  properties: { total: 1 },
  timestamp: Date.now(),
})
const write = (rows: EventRow[]) => database.db.transaction((tx) => eventsSink.write(tx, rows))
const stored = async () => Number((await database.db.rows<{ n: number }>(sql`select count(*)::int as n from events`))[0].n)

describe('a counted insert says what was stored already', () => {
  test("one project's rows: none, then the resent ones", async () => {
    const [a] = projects
    const first = [event(a), event(a), event(a)]
    expect(await write(first)).toEqual(new Map())
    const before = await stored()
    expect(await write([first[0], event(a), first[2]])).toEqual(new Map([[a, 2]]))
    expect(await stored()).toBe(before + 1)
  })

  test("several projects' rows: the resent ones per project", async () => {
    const [a, b] = projects
    const first = [event(a), event(b), event(b)]
    expect(await write(first)).toEqual(new Map())
    const before = await stored()
    expect(await write([first[1], event(a), first[2], first[0], event(b)])).toEqual(new Map([[b, 2], [a, 1]]))
    expect(await stored()).toBe(before + 2)
  })

  test('a row twice in one statement is stored once and counted as a resend', async () => {
    const [a] = projects
    const twice = event(a)
    expect(await write([twice, { ...twice }])).toEqual(new Map([[a, 1]]))
  })
})
