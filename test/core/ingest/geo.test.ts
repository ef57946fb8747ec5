import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { Reader } from 'maxmind'
import { ConfigError } from '@sightline/core/config'
import { BUNDLED_GEOIP_DB, openGeoDatabase } from '@sightline/core/ingest/geo/reader'
import { geoFromRecord } from '@sightline/core/ingest/geo/service'
import { startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase } from '../../helpers/database'

const US = { country: 'US', region: 'California', city: 'Mountain View', latitude: expect.any(Number), longitude: expect.any(Number), timezone: null }

describe('GeoIP database', () => {
  const geo = openGeoDatabase()

  test('the bundled DB-IP database locates public IPv4 and IPv6 addresses', () => {
    expect(geo.lookup('8.8.8.8')).toEqual(US)
    expect(geo.lookup('::ffff:8.8.8.8')).toEqual(US)
    expect(geo.lookup('2001:4860:4860::8888')?.country).toMatch(/^[A-Z]{2}$/)
  })

  test('private, loopback and invalid addresses are not located', () => {
    for (const address of ['10.0.0.1', '192.168.0.10', '127.0.0.1', '::1', 'fd00::1', 'nonsense', '', null]) expect(geo.lookup(address)).toBeNull()
  })

  test('6to4 addresses carrying a private or loopback IPv4 address are not located', () => {
    // DB-IP locates all of 2002::/16 (in California): 10.0.0.1, 192.168.1.1 and 127.0.0.1 as 6to4 would be "found" there.
    for (const address of ['2002:a00:1::1', '2002:c0a8:101::1', '2002:7f00:1::1', '2002::1']) expect(geo.lookup(address)).toBeNull()
  })

  test('MaxMind GeoIP2 records read the same as DB-IP ones', () => {
    expect(
      geoFromRecord({
        country: { iso_code: 'DE' },
        subdivisions: [{ names: { en: 'Berlin' } }],
        city: { names: { en: 'Berlin', de: 'Berlin' } },
        location: { latitude: 52.5, longitude: 13.4, time_zone: 'Europe/Berlin' },
      }),
    ).toEqual({ country: 'DE', region: 'Berlin', city: 'Berlin', latitude: 52.5, longitude: 13.4, timezone: 'Europe/Berlin' })
    expect(geoFromRecord({})).toBeNull()
  })

  test('GEOIP_DB names the files to read; a missing one stops the start', async () => {
    const v4only = openGeoDatabase([BUNDLED_GEOIP_DB[0]])
    expect(v4only.lookup('8.8.8.8')?.country).toBe('US')
    expect(v4only.lookup('2001:4860:4860::8888')).toBeNull()
    expect(() => openGeoDatabase(['/nonexistent/city.mmdb'])).toThrow(ConfigError)
    await expect(startCore({ env: { GEOIP_DB: '/nonexistent/city.mmdb' } })).rejects.toThrow(ConfigError)
    const core = await startCore({ env: { GEOIP_DB: BUNDLED_GEOIP_DB[0] } })
    try {
      expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'g', endUserId: 'g-user', ip: '2001:4860:4860::8888' })).json()).toEqual({ success: true, geo: null })
    } finally {
      await core.close()
    }
  })
  describe('a damaged database file', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'sl-geoip-'))
    afterAll(() => rmSync(scratch, { recursive: true, force: true }))
    const bundled = readFileSync(BUNDLED_GEOIP_DB[0])

    test('damaged before its metadata (the middle of a copy lost): the start stops, naming GEOIP_DB', async () => {
      const path = join(scratch, 'holed.mmdb')
      writeFileSync(path, Buffer.concat([bundled.subarray(0, 1000), bundled.subarray(bundled.length - 20_000)]))
      expect(() => openGeoDatabase([path])).toThrow(/^GEOIP_DB: .* is damaged/)
      await expect(startCore({ env: { GEOIP_DB: path } })).rejects.toThrow(ConfigError)
    })

    test('damaged where the start did not look: that address is not located, and ingestion still stores', async () => {
      // The record 8.8.8.8 resolves to, made unreadable (an extended type byte no decoder knows).
      const damaged = Buffer.from(bundled)
      const tree = new Reader(damaged) as unknown as { findAddressInTree(ip: string): [number, number]; metadata: { nodeCount: number; searchTreeSize: number } }
      const offset = tree.findAddressInTree('8.8.8.8')[0] - tree.metadata.nodeCount + tree.metadata.searchTreeSize
      damaged[offset] = 0x00
      damaged[offset + 1] = 0xff
      const path = join(scratch, 'damaged-record.mmdb')
      writeFileSync(path, damaged)
      expect(() => new Reader(damaged).get('8.8.8.8')).toThrow()

      const core = await startCore({ env: { GEOIP_DB: `${path},${BUNDLED_GEOIP_DB[1]}`, TRUSTED_PROXIES: '127.0.0.1' } })
      try {
        expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'damaged', endUserId: 'damaged-user', ip: '8.8.8.8' })).json()).toEqual({ success: true, geo: null })
        expect((await (await core.post('/api/ingestion/ip-info', { sessionId: 'damaged', endUserId: 'damaged-user', ip: '1.1.1.1' })).json()).geo.country).toBe('AU')
        const base = await core.listen()
        const replay = await fetch(`${base}/api/ingestion/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${core.key}`, 'x-forwarded-for': '8.8.8.8' },
          body: JSON.stringify({ sessionId: 'damaged-replay', events: [{ type: 4, timestamp: Date.now(), data: { href: 'https://x.test/' } }] }),
        })
        expect(replay.status).toBe(200)
        const [session] = await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from sessions where session_id = 'damaged-replay'`)
        expect(session.n).toBe(1)
      } finally {
        await core.close()
      }
    })
  })
})

// A database core may read but not write (installed by root, core run as another user): Bun maps
// only files it may write, so the file is read instead. Needs root, to run the check as nobody, and
// a checkout nobody may read.
const reader = Bun.fileURLToPath(import.meta.resolve('@sightline/core/ingest/geo/reader'))
const nobodyCanRead = process.getuid?.() === 0 && [reader, ...BUNDLED_GEOIP_DB].every((file) => Bun.spawnSync(['runuser', '-u', 'nobody', '--', 'test', '-r', file]).exitCode === 0)
test.skipIf(!nobodyCanRead)('a GeoIP database core may only read is read, with a warning, and answers the same', () => {
  const script = `
    const { openGeoDatabase } = await import(${JSON.stringify(reader)})
    const warnings = []
    const geo = openGeoDatabase(undefined, { warn: (message) => warnings.push(message) })
    console.log(JSON.stringify({ country: geo.lookup('8.8.8.8')?.country, warnings }))`
  const run = Bun.spawnSync(['runuser', '-u', 'nobody', '--', process.execPath, '-e', script], { env: { PATH: process.env.PATH ?? '', HOME: '/tmp', TMPDIR: '/tmp' } })
  expect(run.stderr.toString()).toBe('')
  const { country, warnings } = JSON.parse(run.stdout.toString())
  expect(country).toBe('US')
  expect(warnings).toEqual(Array(BUNDLED_GEOIP_DB.length).fill(expect.stringContaining('read into memory')))
})

describe('POST /api/ingestion/ip-info', () => {
  let core: TestCore
  beforeAll(async () => {
    core = await startCore()
  })
  afterAll(() => core.close())

  test('a public ip in the body is located and stored on the session and end user', async () => {
    const res = await core.post('/api/ingestion/ip-info', { sessionId: 'geo-1', endUserId: 'geo-user', ip: '8.8.8.8' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, geo: US })
    const [session] = await core.database.db.rows<{ geo: unknown }>(sql`select geo from sessions where session_id = 'geo-1'`)
    const [user] = await core.database.db.rows<{ geo: unknown }>(sql`select geo from end_users where end_user_id = 'geo-user'`)
    expect(session.geo).toEqual(US)
    expect(user.geo).toEqual(US)
  })

  // WIRE.md (Ids): a body naming no end user gets its session's, made when the session has none, and
  // the answer returns it (session-end-user-observability.test.ts); here: that end user is located too.
  test("without endUserId the session's end user is located too; a session without one gets one made, located", async () => {
    const endUserGeo = async (endUserId: string) => (await core.database.db.rows<{ geo: unknown }>(sql`select geo from end_users where end_user_id = ${endUserId}`))[0]?.geo
    await core.post('/api/ingestion/events', { sessionId: 'geo-known', endUserId: 'geo-known-user', events: [{ type: 4, timestamp: Date.now(), data: { href: 'https://shop.test/' } }] })
    expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'geo-known', ip: '8.8.8.8' })).json()).toEqual({ success: true, geo: US, endUserId: 'geo-known-user' })
    expect(await endUserGeo('geo-known-user')).toEqual(US)
    const users = async () => (await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from end_users`))[0].n
    const before = await users()
    const made = await (await core.post('/api/ingestion/ip-info', { sessionId: 'geo-anonymous', ip: '8.8.8.8' })).json()
    expect(made).toEqual({ success: true, geo: US, endUserId: expect.any(String) })
    expect(await users()).toBe(before + 1)
    expect(await endUserGeo(made.endUserId)).toEqual(US)
    const [session] = await core.database.db.rows<{ end_user_id: string; geo: unknown }>(sql`select end_user_id, geo from sessions where session_id = 'geo-anonymous'`)
    expect(session).toEqual({ end_user_id: made.endUserId, geo: US })
  })

  test('an IPv4 address written as IPv6, dotted or in hex, is located as that IPv4 address', async () => {
    for (const ip of ['::ffff:8.8.8.8', '::ffff:808:808', '0::ffff:8.8.8.8', '0:0::ffff:808:808']) {
      expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'geo-mapped', endUserId: 'geo-mapped-user', ip })).json()).toEqual({ success: true, geo: US })
    }
  })

  test('a private or invalid ip in the body is not taken; with no socket address the answer is null and nothing is erased', async () => {
    for (const ip of ['10.0.0.1', '127.0.0.1', 'garbage', null]) {
      expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'geo-1', endUserId: 'geo-user', ip })).json()).toEqual({ success: true, geo: null })
    }
    const [session] = await core.database.db.rows<{ geo: unknown }>(sql`select geo from sessions where session_id = 'geo-1'`)
    const [user] = await core.database.db.rows<{ geo: unknown }>(sql`select geo from end_users where end_user_id = 'geo-user'`)
    expect(session.geo).toEqual(US)
    expect(user.geo).toEqual(US)
  })

  // WIRE.md: `ip` "is used only when it is a valid public address"; a long text is no address either,
  // so it is ignored like "garbage", not a 400 that loses the session and end user the request names.
  test('an ip longer than any address (a forwarded-for list) is not taken, and the request is stored', async () => {
    for (const ip of ['8.8.8.8, 203.0.113.7, 198.51.100.23, 192.0.2.44, 100.64.0.1', 'x'.repeat(100_000)]) {
      const res = await core.post('/api/ingestion/ip-info', { sessionId: 'geo-long-ip', endUserId: 'geo-long-ip-user', ip })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ success: true, geo: null })
    }
    expect(await core.database.db.rows(sql`select 1 from sessions where session_id = 'geo-long-ip' and end_user_id = 'geo-long-ip-user'`)).toHaveLength(1)
  })

  test('a 6to4 ip carrying a private IPv4 address is not taken', async () => {
    expect(await (await core.post('/api/ingestion/ip-info', { sessionId: 'geo-6to4', endUserId: 'geo-6to4-user', ip: '2002:c0a8:101::1' })).json()).toEqual({ success: true, geo: null })
  })
})

describe('client address over a real socket', () => {
  const overSocket = async (trustedProxies: string, forwardedFor?: string, path = '/api/ingestion/ip-info', body: object = { sessionId: 'sock', endUserId: 'sock-user' }) => {
    const core = await startCore({ env: trustedProxies ? { TRUSTED_PROXIES: trustedProxies } : {} })
    try {
      const base = await core.listen()
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${core.key}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
        body: JSON.stringify(body),
      })
      const answer = await res.json()
      const [session] = await core.database.db.rows<{ geo: { country: string } | null }>(sql`select geo from sessions limit 1`)
      return { answer, session }
    } finally {
      await core.close()
    }
  }

  test('the loopback socket address has no geo, and X-Forwarded-For from an untrusted peer is ignored', async () => {
    expect((await overSocket('', '8.8.8.8')).answer).toEqual({ success: true, geo: null })
  })

  test('behind a trusted proxy the forwarded address is located', async () => {
    expect((await overSocket('127.0.0.1/32', '1.1.1.1, 8.8.8.8')).answer).toEqual({ success: true, geo: US })
    expect((await overSocket('127.0.0.0/8, 8.8.8.0/24', '1.1.1.1, 8.8.8.8')).answer.geo.country).toBe('AU')
    // The proxy as it shows on a socket listening on `::`: an IPv4-mapped range.
    expect((await overSocket('::ffff:127.0.0.0/104', '8.8.8.8')).answer).toEqual({ success: true, geo: US })
  })

  test('an IPv4-mapped TRUSTED_PROXIES range shorter than /96 stops the start however the address is written: it would trust every client', async () => {
    // `0::ffff:10.0.0.0/8` is `::/8`, as `::ffff:10.0.0.0/8` is: every IPv4 client's X-Forwarded-For believed.
    const database = await createTestDatabase()
    try {
      for (const wide of ['::ffff:10.0.0.0/8', '0::ffff:10.0.0.0/8', '0:0::ffff:a00:0/24']) {
        await expect(startCore({ database, env: { TRUSTED_PROXIES: `127.0.0.1,${wide}` } })).rejects.toThrow(ConfigError)
      }
    } finally {
      await database.close()
    }
  })

  test('an empty member the proxies left at the right of X-Forwarded-For is skipped', async () => {
    expect((await overSocket('127.0.0.1/32', '1.1.1.1, 8.8.8.8, ')).answer).toEqual({ success: true, geo: US })
  })

  test('replay chunks record the geo of the forwarded client on the session', async () => {
    const { session } = await overSocket('127.0.0.1', '8.8.8.8', '/api/ingestion/events', { sessionId: 'sock', events: [{ type: 4, timestamp: Date.now(), data: { href: 'https://x.test/' } }] })
    expect(session.geo).toEqual(US)
  })
})
