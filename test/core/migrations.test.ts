import { afterAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { MIGRATION_LOCK, MIGRATIONS_FOLDER } from '@sightline/core/db'
import drizzleConfig from '../../drizzle/drizzle.config'
import journal from '../../drizzle/migrations/meta/_journal.json'
import { databaseUrlFor, engine, TEST_DATABASE_URL } from '../helpers/database'
import { ROOT, spawnCore } from '../helpers/process'

// Upgrades: a database made by an earlier release (every earlier migration), holding the rows that
// release wrote, and the current core started on it. Every migration must apply to a full database
// without losing or changing a row, and core must serve what was there.

const PROJECT = '0190a4b4-0000-7000-8000-00000000000a'
const KEY = `sl_dev_${'k'.repeat(32)}`
const REVOKED_KEY = `sl_dev_${'r'.repeat(32)}`
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const MONTH = `date_trunc('month', now() at time zone 'UTC')::date`

/** What an operator's database holds, in the schema of the first migration (later ones only add). */
const FIRST_RELEASE_ROWS = `
insert into projects (project_id, name, monthly_limit, created_at) values ('${PROJECT}', 'shop', 1000, now() - interval '40 days');
insert into environments (project_id, name) values ('${PROJECT}', 'production'), ('${PROJECT}', 'development');
insert into api_keys (project_id, environment, key_hash, key_prefix, revoked_at) values
  ('${PROJECT}', 'development', '${sha256(KEY)}', '${KEY.slice(0, 16)}', null),
  ('${PROJECT}', 'development', '${sha256(REVOKED_KEY)}', '${REVOKED_KEY.slice(0, 16)}', now() - interval '1 day');
insert into end_users (project_id, end_user_id, attributes, geo) values
  ('${PROJECT}', 'user-1', '{"email": "ada@shop.example", "plan": "pro"}', '{"country": "DE"}');
insert into end_user_aliases (project_id, alias_id, end_user_id) values ('${PROJECT}', 'anon-1', 'user-1');
insert into sessions (project_id, session_id, environment, end_user_id, started_at, last_activity_at, entry_url, referrer,
  user_agent, browser, os, device_type, automatic_properties, window_ids, geo, sdk_version) values
  ('${PROJECT}', 'old-1', 'development', 'user-1', now() - interval '1 hour', now() - interval '50 minutes', 'https://shop.example/landing',
   'https://search.example/', 'Mozilla/5.0', 'Firefox', 'Linux', 'desktop', '{"language": "de-DE"}', '{w1,w2}', '{"country": "DE"}', '1.0.0'),
  ('${PROJECT}', 'old-2', 'development', null, now() - interval '2 days', now() - interval '2 days', null, null, null, null, null, null, null, '{}', null, null);
insert into events (project_id, uuid, environment, session_id, end_user_id, event_name, properties, timestamp)
  select '${PROJECT}', ('0190a4b4-0000-7000-8000-' || lpad(n::text, 12, '0'))::uuid, 'development', 'old-1', 'user-1',
    'checkout_step', jsonb_build_object('step', n, 'note', E'ü \\\\ "quoted"'), now() - interval '55 minutes' + n * interval '1 second'
  from generate_series(1, 50) n;
insert into replay_chunks (project_id, session_id, window_id, content_hash, seq, first_timestamp, last_timestamp, event_count,
  has_full_snapshot, raw_bytes, data) values
  ('${PROJECT}', 'old-1', 'w1', 'hash-1', 1, now() - interval '55 minutes', now() - interval '54 minutes', 12, true, 4096, '\\x28b52ffd00'::bytea);
insert into groups (project_id, group_type, group_key, properties) values ('${PROJECT}', 'company', 'acme', '{"seats": 12}');
insert into group_members (project_id, group_type, group_key, end_user_id) values ('${PROJECT}', 'company', 'acme', 'user-1');
insert into logs (project_id, content_hash, session_id, level, message, timestamp) values
  ('${PROJECT}', 'log-1', 'old-1', 'warn', 'slow image', now() - interval '52 minutes');
insert into network_errors (project_id, session_id, request_id, url, method, status, duration_ms, timestamp) values
  ('${PROJECT}', 'old-1', 'req-1', 'https://api.shop.example/cart', 'POST', 502, 812.5, now() - interval '51 minutes');
insert into spans (project_id, trace_id, span_id, session_id, name, start_time, end_time, duration_ms) values
  ('${PROJECT}', 'trace-1', 'span-1', 'old-1', 'GET /cart', now() - interval '51 minutes', now() - interval '51 minutes', 12.5);
insert into issues (project_id, issue_id, fingerprint, title, first_seen_at, last_seen_at, occurrences, affected_users) values
  ('${PROJECT}', '0190a4b4-0000-7000-8000-0000000000e1', 'fp-1', 'TypeError: x is undefined', now() - interval '3 days', now() - interval '52 minutes', 7, 1);
insert into error_events (project_id, content_hash, issue_id, session_id, end_user_id, name, message, timestamp) values
  ('${PROJECT}', 'err-1', '0190a4b4-0000-7000-8000-0000000000e1', 'old-1', 'user-1', 'TypeError', 'x is undefined', now() - interval '52 minutes');
insert into sourcemaps (project_id, release, name, content, size_bytes) values ('${PROJECT}', 'shop@1.0.0', 'app.js.map', '\\x7b7d'::bytea, 2);
insert into presence (project_id, session_id, window_id, url, last_seen_at) values ('${PROJECT}', 'old-1', 'w1', 'https://shop.example/cart', now() - interval '50 minutes');
insert into scan_findings (project_id, fingerprint, rule_id, severity, file, message) values ('${PROJECT}', 'scan-1', 'no-eval', 'high', 'src/app.js', 'eval');
insert into usage_counters (project_id, month, events) values ('${PROJECT}', ${MONTH}, 990);
`

/** Rows that only a later schema can hold, written by the releases that had it (by the tag of the migration that made it). */
const LATER_ROWS: Record<string, string> = {
  '0001_issue_end_users': `insert into issue_end_users (project_id, issue_id, end_user_id, first_seen_at) values
    ('${PROJECT}', '0190a4b4-0000-7000-8000-0000000000e1', 'user-1', now() - interval '52 minutes');`,
  '0002_usage_counter_shards': `insert into usage_counters (project_id, month, shard, events) values ('${PROJECT}', ${MONTH}, 3, 5);`,
}

const scratch = mkdtempSync(join(tmpdir(), 'sightline-upgrade-'))
const databases: string[] = []
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true })
  if (databases.length === 0) return
  const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
  for (const name of databases) await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.end()
})

/** A database of its own on the test server, empty: no migration has run on it. */
async function emptyPostgresDatabase(name: string): Promise<string> {
  const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.unsafe(`create database ${name}`)
  await admin.end()
  databases.push(name)
  return databaseUrlFor(TEST_DATABASE_URL!, name)
}

// initdb takes seconds: an empty embedded cluster is made once and copied for each release.
let emptyCluster: Promise<Blob> | undefined
const emptyEmbeddedCluster = () =>
  (emptyCluster ??= PGlite.create().then(async (pg) => {
    const dump = await pg.dumpDataDir('none')
    await pg.close()
    return dump
  }))

/** The migrations folder as a release that had the first `count` migrations shipped it. */
function migrationsOfRelease(count: number): string {
  const folder = join(scratch, `migrations-${count}`)
  mkdirSync(join(folder, 'meta'), { recursive: true })
  const entries = journal.entries.slice(0, count)
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }))
  for (const { tag } of entries) copyFileSync(join(MIGRATIONS_FOLDER, `${tag}.sql`), join(folder, `${tag}.sql`))
  return folder
}

const rowsFor = (count: number) =>
  [FIRST_RELEASE_ROWS, ...journal.entries.slice(1, count).map(({ tag }) => LATER_ROWS[tag] ?? '')].join('\n')

type Query = <T>(text: string) => Promise<T[]>

/**
 * Every row of every table as text, over the columns the table had before the upgrade: columns a
 * migration adds are left out, so what is compared is exactly what was there.
 */
async function contents(query: Query, columns?: Map<string, string[]>): Promise<{ columns: Map<string, string[]>; rows: Record<string, string[]> }> {
  if (!columns) {
    const found = await query<{ table_name: string; columns: string[] }>(
      `select table_name, array_agg(column_name::text order by ordinal_position) as columns
       from information_schema.columns where table_schema = 'public' group by table_name`,
    )
    columns = new Map(found.map((t) => [t.table_name, t.columns]))
  }
  const rows: Record<string, string[]> = {}
  for (const [table, names] of columns) {
    const list = names.map((name) => `"${name}"`).join(', ')
    const found = await query<{ row: string }>(`select row(${list})::text as row from "${table}" order by 1`)
    rows[table] = found.map((r) => r.row)
  }
  return { columns, rows }
}

interface EarlierDatabase {
  env: Record<string, string>
  /** Reads the database while no core holds it. */
  read<T>(fn: (query: Query) => Promise<T>): Promise<T>
}

/**
 * A database made by the release that had the first `count` migrations, holding that release's rows
 * and `extraRows` (named apart by `name`, so tests of one release do not share a database).
 */
async function earlierDatabase(count: number, { name = `${count}`, extraRows = '' } = {}): Promise<EarlierDatabase> {
  const migrationsFolder = migrationsOfRelease(count)
  if (engine === 'postgres') {
    const url = await emptyPostgresDatabase(`sl_test_upgrade_${process.pid}_${name}`)
    const read = async <T,>(fn: (query: Query) => Promise<T>) => {
      const client = postgres(url, { max: 1, onnotice: () => {} })
      try {
        return await fn((text) => client.unsafe(text) as never)
      } finally {
        await client.end()
      }
    }
    const client = postgres(url, { max: 1, onnotice: () => {} })
    await migratePostgres(drizzlePostgres(client), { migrationsFolder })
    await client.unsafe(rowsFor(count) + extraRows)
    await client.end()
    return { env: { DATABASE_URL: url }, read }
  }
  const dir = join(scratch, `data-${name}`)
  mkdirSync(dir)
  const pg = await PGlite.create(join(dir, 'pglite'), { loadDataDir: await emptyEmbeddedCluster() })
  await migratePglite(drizzlePglite({ client: pg }), { migrationsFolder })
  await pg.exec(rowsFor(count) + extraRows)
  await pg.close()
  return {
    env: { DATA_DIR: dir },
    async read(fn) {
      const pg = await PGlite.create(join(dir, 'pglite'))
      try {
        return await fn(async (text) => (await pg.query(text)).rows as never)
      } finally {
        await pg.close()
      }
    },
  }
}

const send = (url: string, key: string, path: string, body: object) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(body) }).then((res) => res.status)

describe('upgrading a database of an earlier release', () => {
  const earlier = journal.entries.slice(0, -1).map((_, i) => i + 1)

  test.each(earlier)('made by the first %i migration(s): every row kept as it was, and core serves what was there', async (count) => {
    const database = await earlierDatabase(count)
    const before = await database.read((query) => contents(query))
    expect(before.rows.events).toHaveLength(50)

    const core = await spawnCore(database.env)
    expect(core.output()).not.toContain('shown this once') // the database had a project
    await core.stop()
    const after = await database.read((query) => contents(query, before.columns))
    expect(after.rows).toEqual(before.rows)
    const applied = await database.read((query) => query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations'))
    expect(applied[0].n).toBe(journal.entries.length)

    const again = await spawnCore(database.env)
    try {
      expect(await send(again.url, KEY, '/api/ingestion/customEvent', { sessionId: 'old-1', eventName: 'after_upgrade' })).toBe(200)
      expect(await send(again.url, REVOKED_KEY, '/api/ingestion/customEvent', { sessionId: 'old-1', eventName: 'x' })).toBe(401)
      // A later page of the old session: its entry URL stays the first page's.
      const meta = { type: 4, timestamp: Date.now(), data: { href: 'https://shop.example/later', width: 1280, height: 720 } }
      expect(await send(again.url, KEY, '/api/ingestion/events', { sessionId: 'old-1', windowId: 'w1', seq: 2, events: [meta] })).toBe(200)
    } finally {
      await again.stop()
    }
    const [session] = await database.read((query) => query<{ entry_url: string }>(`select entry_url from sessions where session_id = 'old-1'`))
    expect(session.entry_url).toBe('https://shop.example/landing')
    // The month's usage carried over (990, and 5 more in a shard where shards existed), plus the two new items.
    const [usage] = await database.read((query) => query<{ n: number }>(`select sum(events)::int as n from usage_counters where month = ${MONTH}`))
    expect(usage.n).toBe((count >= 3 ? 995 : 990) + 2)
  })
})

describe.skipIf(engine !== 'postgres')('core processes starting together on an empty database', () => {
  test('the migrations run once, one default project is made, and every process serves', async () => {
    const env = { DATABASE_URL: await emptyPostgresDatabase(`sl_test_together_${process.pid}`) }
    const cores = await Promise.all([spawnCore(env), spawnCore(env), spawnCore(env)])
    try {
      const keys = cores.map((core) => core.output().match(/shown this once: +(sl_dev_\S+)/)?.[1]).filter(Boolean) as string[]
      expect(keys).toHaveLength(1)
      for (const core of cores) {
        expect((await fetch(`${core.url}/health`)).status).toBe(200)
        expect(await send(core.url, keys[0], '/api/ingestion/customEvent', { sessionId: 'together', eventName: 'hello' })).toBe(200)
      }
      const client = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        expect((await client`select count(*)::int as n from drizzle.__drizzle_migrations`)[0].n).toBe(journal.entries.length)
        expect((await client`select name from projects`).map((p) => p.name)).toEqual(['default'])
      } finally {
        await client.end()
      }
    } finally {
      await Promise.all(cores.map((core) => core.stop()))
    }
  })
})

describe.skipIf(engine !== 'postgres')('a core process starting while another migrates', () => {
  test('says that it waits, then starts once the other is done', async () => {
    const env = { DATABASE_URL: await emptyPostgresDatabase(`sl_test_waiting_${process.pid}`) }
    const other = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} })
    try {
      // What a core process holds while it migrates.
      await other`select pg_advisory_lock(${MIGRATION_LOCK})`
      const starting = spawnCore(env)
      await Bun.sleep(1_000)
      await other`select pg_advisory_unlock(${MIGRATION_LOCK})`
      const core = await starting
      await core.stop()
      const log = core.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line).msg)
      expect(log.slice(0, 3)).toEqual(['waiting for another core process to finish migrating the database', 'created the default project', 'listening'])
    } finally {
      await other.end()
    }
  })
})

/** Applies every migration of this core to a database, with the migrator core runs at start. */
async function migrateToCurrent(database: EarlierDatabase): Promise<void> {
  if (engine === 'postgres') {
    const client = postgres(database.env.DATABASE_URL, { max: 1, onnotice: () => {} })
    try {
      await migratePostgres(drizzlePostgres(client), { migrationsFolder: MIGRATIONS_FOLDER })
    } finally {
      await client.end()
    }
    return
  }
  const pg = await PGlite.create(join(database.env.DATA_DIR, 'pglite'))
  try {
    await migratePglite(drizzlePglite({ client: pg }), { migrationsFolder: MIGRATIONS_FOLDER })
  } finally {
    await pg.close()
  }
}

describe('upgrading Issues whose users were stored before aliases counted as their person', () => {
  // Cores before 0007 kept an Issue's user keyed by the device even once it was made an alias.
  const release = journal.entries.findIndex(({ tag }) => tag === '0007_issue_end_users_by_end_user') + 1
  const OTHER = '0190a4b4-0000-7000-8000-00000000000b'
  const issue = (n: number) => `0190a4b4-0000-7000-8000-0000000001${String(n).padStart(2, '0')}`
  const day = (d: number) => `'2026-01-${String(d).padStart(2, '0')} 00:00:00+00'`
  const issueRow = (project: string, n: number, affected: number) =>
    `('${project}', '${issue(n)}', 'fp-people-${n}', 'Error ${n}', ${day(1)}, ${day(20)}, 9, ${affected})`
  const ROWS = `
    insert into projects (project_id, name) values ('${OTHER}', 'other');
    insert into end_user_aliases (project_id, alias_id, end_user_id) values
      ('${PROJECT}', 'ada-phone', 'ada'), ('${PROJECT}', 'ada-laptop', 'ada'), ('${PROJECT}', 'bob-phone', 'bob');
    insert into issues (project_id, issue_id, fingerprint, title, first_seen_at, last_seen_at, occurrences, affected_users) values
      ${issueRow(PROJECT, 1, 3)}, ${issueRow(PROJECT, 2, 3)}, ${issueRow(PROJECT, 3, 5)}, ${issueRow(PROJECT, 4, 4)}, ${issueRow(OTHER, 5, 2)};
    insert into issue_end_users (project_id, issue_id, end_user_id, first_seen_at) values
      -- Ada and two of her devices, one seen first: one person, seen since the device's first report.
      ('${PROJECT}', '${issue(1)}', 'ada', ${day(5)}), ('${PROJECT}', '${issue(1)}', 'ada-phone', ${day(3)}),
      ('${PROJECT}', '${issue(1)}', 'ada-laptop', ${day(9)}),
      -- Two devices of Ada without her own row, and Bob.
      ('${PROJECT}', '${issue(2)}', 'ada-phone', ${day(7)}), ('${PROJECT}', '${issue(2)}', 'ada-laptop', ${day(6)}),
      ('${PROJECT}', '${issue(2)}', 'bob', ${day(8)}),
      -- No alias: counted (with users stored before issue_end_users, 0001) as it was.
      ('${PROJECT}', '${issue(3)}', 'bob', ${day(2)}), ('${PROJECT}', '${issue(3)}', 'carol', ${day(2)}),
      -- A device alone, among users counted before issue_end_users: re-keyed, the count stays.
      ('${PROJECT}', '${issue(4)}', 'bob-phone', ${day(4)}),
      -- Another project, where these ids are no aliases.
      ('${OTHER}', '${issue(5)}', 'ada', ${day(3)}), ('${OTHER}', '${issue(5)}', 'ada-phone', ${day(4)});
  `
  const users = (query: Query) =>
    query<{ row: string }>(
      `select project_id || ' ' || issue_id || ' ' || end_user_id || ' ' || to_char(first_seen_at at time zone 'UTC', 'YYYY-MM-DD') as row
       from issue_end_users where issue_id::text like '0190a4b4-0000-7000-8000-0000000001%' order by 1`,
    ).then((rows) => rows.map((r) => r.row))
  const counts = (query: Query) =>
    query<{ issue_id: string; affected_users: number }>(
      `select issue_id::text, affected_users::int from issues where issue_id::text like '0190a4b4-0000-7000-8000-0000000001%' order by 1`,
    ).then((rows) => Object.fromEntries(rows.map((r) => [r.issue_id, r.affected_users])))

  test("a device made an alias counts as its person: its rows re-keyed or merged, each Issue's count lowered by the rows merged", async () => {
    const database = await earlierDatabase(release, { name: 'issue_people', extraRows: ROWS })
    const before = await database.read((query) => contents(query))
    await migrateToCurrent(database)

    const row = (project: string, n: number, user: string, d: number) => `${project} ${issue(n)} ${user} 2026-01-${String(d).padStart(2, '0')}`
    expect(await database.read(users)).toEqual(
      [
        row(PROJECT, 1, 'ada', 3),
        row(PROJECT, 2, 'ada', 6),
        row(PROJECT, 2, 'bob', 8),
        row(PROJECT, 3, 'bob', 2),
        row(PROJECT, 3, 'carol', 2),
        row(PROJECT, 4, 'bob', 4),
        row(OTHER, 5, 'ada', 3),
        row(OTHER, 5, 'ada-phone', 4),
      ].sort(),
    )
    expect(await database.read(counts)).toEqual({ [issue(1)]: 1, [issue(2)]: 2, [issue(3)]: 5, [issue(4)]: 4, [issue(5)]: 2 })

    // Every other row is as it was (the first release's Issue, whose user is a person, among them).
    const after = await database.read((query) => contents(query, before.columns))
    for (const table of Object.keys(before.rows).filter((t) => t !== 'issue_end_users' && t !== 'issues')) {
      expect(after.rows[table], table).toEqual(before.rows[table])
    }
    const untouched = (rows: string[]) => rows.filter((r) => !r.includes('0190a4b4-0000-7000-8000-0000000001'))
    expect(untouched(after.rows.issues)).toEqual(untouched(before.rows.issues))
    expect(untouched(after.rows.issue_end_users)).toEqual(untouched(before.rows.issue_end_users))

    // Run again, the migration finds nothing to move and changes nothing.
    const migration = await Bun.file(join(MIGRATIONS_FOLDER, `${journal.entries[release].tag}.sql`)).text()
    const moved = await database.read((query) => contents(query, before.columns))
    for (const statement of migration.split('--> statement-breakpoint')) await database.read((query) => query(statement))
    expect(await database.read((query) => contents(query, before.columns))).toEqual(moved)
  })
})

describe('the schema and the migrations', () => {
  test('agree: generating a migration from drizzle/schema finds nothing to add', async () => {
    // A table file changed without its migration would reach operators as a schema their database lacks.
    const dir = join(scratch, 'generate')
    cpSync(MIGRATIONS_FOLDER, join(dir, 'migrations'), { recursive: true })
    const schema = relative(dir, join(ROOT, 'drizzle/schema/index.ts'))
    writeFileSync(join(dir, 'drizzle.json'), JSON.stringify({ ...drizzleConfig, schema, out: 'migrations' }))
    const proc = Bun.spawn([join(ROOT, 'node_modules/.bin/drizzle-kit'), 'generate', '--config', 'drizzle.json'], { cwd: dir, stdout: 'pipe', stderr: 'pipe' })
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect(exitCode, stderr).toBe(0)
    expect(stdout).toContain('No schema changes')
    expect(readdirSync(join(dir, 'migrations')).sort()).toEqual(readdirSync(MIGRATIONS_FOLDER).sort())
  })
})
