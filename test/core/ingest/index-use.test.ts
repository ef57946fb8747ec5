import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { postgresDatabase, type Database } from '@sightline/core/db'
import { createProject } from '@sightline/core/projects/service'
import { startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase, engine, type TestDatabase } from '../../helpers/database'

/*
 * Statements that join a JSON parameter (jsonb_to_recordset, which the planner guesses at 100 rows)
 * to a table plainly are planned as a hash join over a scan of the whole table, every project's rows,
 * once the table holds some thousands (with tens of thousands, as here: past some hundred thousand the
 * guessed 100 lookups cost less, and the planner takes them). Each request's lookups must go by key instead: the tables are
 * filled, for this project and another, and no request may add to their sequential scan counters.
 * Postgres only: the embedded database's plans are the same, but its counters are no concern here.
 */
// The tables filled below; the others hold a few rows here, which a scan reads as well as an index.
const GROWING = ['end_user_aliases', 'groups', 'sessions', 'end_users', 'sourcemaps']

describe.skipIf(engine !== 'postgres')('lookups by key on tables that grow', () => {
  let database: TestDatabase
  let core: TestCore
  let raw: postgres.Sql
  // The core's own connections: a backend reports its counters when it ends, and maybe not before.
  let coreDb: Database
  let closed = false

  beforeAll(async () => {
    database = await createTestDatabase()
    raw = postgres(database.url!, { max: 1, onnotice: () => {} })
    const other = await createProject(database.db.orm, { name: 'other' })
    coreDb = postgresDatabase(database.url!)
    core = await startCore({ database: { db: coreDb, url: database.url, close: () => coreDb.close() } })
    for (const projectId of [other.projectId, core.project.projectId]) {
      await raw.unsafe(`
        insert into end_users (project_id, end_user_id, attributes)
          select '${projectId}', 'u' || i, jsonb_build_object('email', 'user' || i || '@example.com') from generate_series(1, 20000) i;
        insert into end_user_aliases (project_id, alias_id, end_user_id) select '${projectId}', 'a' || i, 'u' || i from generate_series(1, 10000) i;
        insert into sessions (project_id, session_id, environment, end_user_id, started_at, last_activity_at)
          select '${projectId}', 's' || i, 'development', 'a' || i, now(), now() from generate_series(1, 20000) i;
        insert into groups (project_id, group_type, group_key) select '${projectId}', 'company', 'c' || i from generate_series(1, 10000) i;
        insert into sourcemaps (project_id, release, name, url, debug_id, content, size_bytes)
          select '${projectId}', 'shop@' || (i / 50), 'f' || i || '.js.map', 'f' || i || '.js', md5(i::text), '\\x00', 1 from generate_series(1, 10000) i;`)
    }
    await raw.unsafe('vacuum analyze')
  }, 60_000)

  afterAll(async () => {
    await raw?.end()
    if (!closed) await core?.close().then(() => coreDb.close())
    await database?.close()
  })

  /** Sequential scans per table, as the statistics say (the core's connections report theirs as they end). */
  async function seqScans(): Promise<Record<string, number>> {
    // Statistics are read once per transaction: a fresh one sees what was reported meanwhile.
    await Bun.sleep(500)
    const rows = await raw<{ relname: string; seq_scan: string }[]>`
      select relname, seq_scan::text from pg_stat_user_tables where relname in ${raw(GROWING)}`
    return Object.fromEntries(rows.map((r) => [r.relname, Number(r.seq_scan)]))
  }

  test('identify, auth-aware identify, group identify and error reports (and their source maps) scan none of them', async () => {
    const before = await seqScans()
    const requests: [string, object][] = [
      ['/api/ingestion/user', { userId: 'a7', userAttributes: { name: 'Seven' }, sessionId: 's7' }],
      ['/api/ingestion/user/auth', { userId: 'new-device', userAttributes: { email: 'user8@example.com' }, sessionId: 'new-session', authFields: ['email'] }],
      ['/api/ingestion/groupidentify', { sessionId: 's9', groupType: 'company', groupKey: 'c9', groupProperties: { plan: 'pro' } }],
      ['/api/ingestion/errors', { sessionId: 's10', name: 'TypeError', message: 'x is undefined', timestampMs: Date.now() }],
      ['/api/ingestion/errors', { sessionId: 's11', endUserId: 'a11', name: 'TypeError', message: 'x is undefined', timestampMs: Date.now() }],
      ['/api/ingestion/init', { sessionId: 's12', endUserId: null }],
      // Maps are looked for by release and by debug id (none of these maps the frame: their content is no map).
      ['/api/ingestion/errors', { sessionId: 's13', name: 'TypeError', message: 'y is undefined', timestampMs: Date.now(), release: 'shop@3', stack: 'TypeError: y is undefined\n    at render (https://shop.example/app.js:1:2)' }],
    ]
    for (const [path, body] of requests) expect([path, (await core.post(path, body)).status]).toEqual([path, 200])
    closed = true
    await core.close()
    await coreDb.close()
    expect(await seqScans()).toEqual(before)
    // What the lookups found, read here after the counters (these reads may scan).
    const [{ person }] = await raw`select end_user_id as person from end_user_aliases where project_id = ${core.project.projectId} and alias_id = 'new-device'`
    expect(person).toBe('u8')
    const counted = await raw`select end_user_id from issue_end_users where project_id = ${core.project.projectId} order by 1`
    expect(counted.map((r) => r.end_user_id)).toEqual(['u10', 'u11', 'u13'])
  }, 30_000)
})
