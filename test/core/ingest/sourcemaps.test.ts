import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { MAX_GENERATED_LINES, sourceMapPicker, type SourceMapCandidate } from '@sightline/core/ingest/sourcemaps/service'
import { startCore, type TestCore } from '../../helpers/core'
import { createTestDatabase } from '../../helpers/database'
import { countedTransactions } from '../../helpers/counted-transactions'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const map = (file: string, extra: object = {}) => ({ version: 3, file, sources: ['../src/app.ts'], sourcesContent: ['export const x = 1\n'], names: [], mappings: 'AAAA', ...extra })
const upload = (form: FormData, key: string | null = core.key) =>
  core.request('/api/ingestion/sourcemaps', { method: 'POST', body: form, headers: key ? { authorization: `Bearer ${key}` } : {} })
const stored = (release: string) =>
  core.database.db.rows<{ name: string; url: string | null; debug_id: string | null; size_bytes: number; content: Uint8Array }>(
    sql`select name, url, debug_id, size_bytes, content from sourcemaps where release = ${release} order by name`,
  )
const json = (row: { content: Uint8Array }) => JSON.parse(new TextDecoder().decode(Bun.zstdDecompressSync(row.content)))

describe('POST /api/ingestion/sourcemaps', () => {
  test('multipart: several maps with the scripts beside them; scripts lend their debug id and name the served file', async () => {
    const form = new FormData()
    form.append('release', 'web@1.0.0')
    form.append('file', new File([JSON.stringify(map('app.3f2a1b9c.js'))], 'assets/app.3f2a1b9c.js.map'))
    form.append('file', new File(['console.log(1)\n//# debugId=85314830-023F-4CF1-A267-535F4E37BB17\n//# sourceMappingURL=vendor.js.map\n'], 'assets/vendor.77e0d1aa.js'))
    form.append('file', new File([JSON.stringify(map('vendor.77e0d1aa.js', { sources: ['../node_modules/lib/index.js'] }))], 'assets/vendor.js.map'))
    form.append('extra', 'ignored')
    const res = await upload(form)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, stored: ['assets/app.3f2a1b9c.js.map', 'assets/vendor.js.map'] })
    const rows = await stored('web@1.0.0')
    expect(rows.map(({ name, url, debug_id }) => ({ name, url, debug_id }))).toEqual([
      { name: 'assets/app.3f2a1b9c.js.map', url: 'assets/app.3f2a1b9c.js', debug_id: null },
      { name: 'assets/vendor.js.map', url: 'assets/vendor.77e0d1aa.js', debug_id: '85314830023f4cf1a267535f4e37bb17' },
    ])
    // Stored compressed, read back whole.
    expect(json(rows[0])).toEqual(map('app.3f2a1b9c.js'))
    expect(rows[0].size_bytes).toBe(JSON.stringify(map('app.3f2a1b9c.js')).length)
  })

  test('multipart: a script links its map by a sourceMappingURL that climbs out of its folder, is absolute, or carries a query', async () => {
    const form = new FormData()
    form.append('release', 'web@1.1.0')
    const noFile = (source: string) => JSON.stringify({ version: 3, sources: [source], names: [], mappings: 'AAAA' })
    form.append('file', new File(['a()\n//# debugId=85314830-023f-4cf1-a267-535f4e37bb17\n//# sourceMappingURL=https://cdn.example/static/assets/app.js.map?v=2\n'], 'assets/app.3f2a1b9c.js'))
    form.append('file', new File([noFile('src/app.ts')], 'assets/app.js.map'))
    form.append('file', new File(['b()\n//# sourceMappingURL=../maps/home.js.map\n'], 'pages/home.77e0d1aa.js'))
    form.append('file', new File([noFile('src/home.ts')], 'maps/home.js.map'))
    form.append('file', new File(['c()\n//# sourceMappingURL=/about.js.map\n'], 'about.1234abcd.js'))
    form.append('file', new File([noFile('src/about.ts')], 'about.js.map'))
    const res = await upload(form)
    expect(res.status).toBe(200)
    expect((await stored('web@1.1.0')).map(({ name, url, debug_id }) => ({ name, url, debug_id }))).toEqual([
      { name: 'about.js.map', url: 'about.1234abcd.js', debug_id: null },
      { name: 'assets/app.js.map', url: 'assets/app.3f2a1b9c.js', debug_id: '85314830023f4cf1a267535f4e37bb17' },
      { name: 'maps/home.js.map', url: 'pages/home.77e0d1aa.js', debug_id: null },
    ])
  })

  test('JSON form, content as text or as an object; re-uploading a (release, name) replaces it', async () => {
    const first = await core.post('/api/ingestion/sourcemaps', {
      release: 'web@2.0.0',
      files: [
        { name: 'app.js.map', url: 'https://cdn.example/app.js', content: JSON.stringify(map('app.js')) },
        { name: 'other.js.map', content: map('other.js', { debugId: '0123456789abcdef0123456789ABCDEF' }) },
      ],
    })
    expect(await first.json()).toEqual({ success: true, stored: ['app.js.map', 'other.js.map'] })
    const again = await core.post('/api/ingestion/sourcemaps', { release: 'web@2.0.0', files: [{ name: './app.js.map', content: map('app.js', { sources: ['../src/v2.ts'] }) }] })
    expect(again.status).toBe(200)
    const rows = await stored('web@2.0.0')
    expect(rows.map((r) => [r.name, r.url, r.debug_id])).toEqual([
      ['app.js.map', 'app.js', null],
      ['other.js.map', 'other.js', '0123456789abcdef0123456789abcdef'],
    ])
    expect(json(rows[0]).sources).toEqual(['../src/v2.ts'])
    // Another release of the same name is another map.
    await core.post('/api/ingestion/sourcemaps', { release: 'web@2.0.1', files: [{ name: 'app.js.map', content: map('app.js') }] })
    expect(await stored('web@2.0.1')).toHaveLength(1)
    expect(await stored('web@2.0.0')).toHaveLength(2)
  })

  test('JSON form: every file is a source map (WIRE.md), as text too, even one named after the script it maps', async () => {
    const res = await core.post('/api/ingestion/sourcemaps', {
      release: 'web@2.1.0',
      files: [
        { name: 'app.js', url: 'https://cdn.example/app.js', content: JSON.stringify(map('app.js')) },
        { name: 'vendor.js', content: `)]}'\n${JSON.stringify(map('vendor.js'))}` },
        { name: 'other.js.map', content: map('other.js') },
      ],
    })
    expect(await res.json()).toEqual({ success: true, stored: ['app.js', 'vendor.js', 'other.js.map'] })
    expect((await stored('web@2.1.0')).map((r) => [r.name, r.url])).toEqual([
      ['app.js', 'https://cdn.example/app.js'],
      ['other.js.map', 'other.js'],
      ['vendor.js', 'vendor.js'],
    ])
    const alone = await core.post('/api/ingestion/sourcemaps', { release: 'web@2.1.1', files: [{ name: 'main.mjs', content: JSON.stringify(map('main.mjs')) }] })
    expect(await alone.json()).toEqual({ success: true, stored: ['main.mjs'] })
    // A script beside a map is still a script: it names the map's served file and is not stored.
    const beside = await core.post('/api/ingestion/sourcemaps', {
      release: 'web@2.1.2',
      files: [
        { name: 'x.js.map', content: map('') },
        { name: 'x.3f2a1b9c.js', content: '{ let a = 1 }\n//# sourceMappingURL=x.js.map\n' },
      ],
    })
    expect(await beside.json()).toEqual({ success: true, stored: ['x.js.map'] })
    expect((await stored('web@2.1.2')).map((r) => [r.name, r.url])).toEqual([['x.js.map', 'x.3f2a1b9c.js']])
  })

  test('indexed (sectioned) maps are source maps too', async () => {
    const indexed = { version: 3, sections: [{ offset: { line: 0, column: 0 }, map: map('a.js') }] }
    const res = await core.post('/api/ingestion/sourcemaps', { release: 'web@3', files: [{ name: 'a.js.map', content: indexed }] })
    expect(res.status).toBe(200)
  })

  test('a map may reach at most a million lines of generated code, however small it is', async () => {
    const sectionAt = (line: unknown) => ({ version: 3, sections: [{ offset: { line, column: 0 }, map: map('a.js') }] })
    const send = (content: unknown) => core.post('/api/ingestion/sourcemaps', { release: 'lines@2', files: [{ name: 'a.js.map', content }] })
    const rssBefore = process.memoryUsage().rss
    for (const content of [sectionAt(50_000_000), sectionAt(2 ** 40), { version: 3, sections: [{ offset: { line: 0, column: 0 }, map: JSON.stringify(sectionAt(MAX_GENERATED_LINES)) }] }]) {
      const body = await refused(await send(content), 400, 'validation_failed', '/files/0/content')
      expect(body.error.message).toBe('a.js.map: the source map describes more than 1000000 lines of generated code')
    }
    // Reading the first of those took 4 GB.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024)
    for (const line of ['5', -1, 1.5, null]) await refused(await send(sectionAt(line)), 400, 'validation_failed', '/files/0/content')
    await refused(await send(map('a.js', { mappings: ';'.repeat(MAX_GENERATED_LINES) })), 400, 'validation_failed', '/files/0/content')
    expect(await stored('lines@2')).toEqual([])
    expect((await send(map('a.js', { mappings: ';'.repeat(MAX_GENERATED_LINES - 2) + 'AAAA' }))).status).toBe(200)
    expect((await send(sectionAt(MAX_GENERATED_LINES - 1))).status).toBe(200)
  })

  test('a map that would take more memory parsed than the cache keeps is refused: it would be read again for every report it maps', async () => {
    const send = (mappings: string) => core.post('/api/ingestion/sourcemaps', { release: 'dense@1', files: [{ name: 'a.js.map', content: map('a.js', { mappings }) }] })
    // 1.2 million one-field segments in 2.4 MB: about 77 MB decoded, which no report would find cached.
    const body = await refused(await send('A,'.repeat(1_200_000)), 400, 'validation_failed', '/files/0/content')
    expect(body.error.message).toMatch(/^a\.js\.map: the source map would take about \d+ MB to keep parsed, more than 64 MB$/)
    expect(await stored('dense@1')).toEqual([])
    expect((await send('A,'.repeat(400_000) + 'A')).status).toBe(200)
  })

  const refused = async (res: Response, status: number, code: string, path?: string) => {
    expect(res.status).toBe(status)
    const body = await res.json()
    expect(body).toMatchObject({ success: false, error: { code } })
    expect(typeof body.error.message).toBe('string')
    if (path) expect(body.path).toBe(path)
    return body
  }

  test('a map that is not JSON, or not a source map, fails the upload and nothing of it is stored', async () => {
    const body = await refused(
      await core.post('/api/ingestion/sourcemaps', {
        release: 'bad@1',
        files: [
          { name: 'good.js.map', content: map('good.js') },
          { name: 'broken.js.map', content: '{"version":3,' },
        ],
      }),
      400,
      'validation_failed',
      '/files/1/content',
    )
    expect(body.error.message).toContain('broken.js.map')
    for (const content of [{ version: 2, sources: [], mappings: '' }, { version: 3, sources: [] }, '[1,2]', '"text"', { version: 3, sources: 'a', mappings: '' }]) {
      await refused(await core.post('/api/ingestion/sourcemaps', { release: 'bad@1', files: [{ name: 'x.js.map', content }] }), 400, 'validation_failed')
    }
    const form = new FormData()
    form.append('release', 'bad@1')
    form.append('map', new File(['<html>not a map</html>'], 'x.js.map'))
    await refused(await upload(form), 400, 'validation_failed', '/map')
    expect(await stored('bad@1')).toEqual([])
  })

  test.each([
    [{ files: [{ name: 'a.js.map', content: {} }] }, '/release'],
    [{ release: '', files: [{ name: 'a.js.map', content: {} }] }, '/release'],
    [{ release: 'r\nx', files: [{ name: 'a.js.map', content: {} }] }, '/release'],
    [{ release: 'r', files: [] }, '/files'],
    [{ release: 'r', files: [{ content: {} }] }, '/files/0/name'],
    [{ release: 'r', files: [{ name: 'a.js.map' }] }, '/files/0/content'],
    [{ release: 'r', files: [{ name: 'a.js.map', content: 5 }] }, '/files/0/content'],
  ])('validation (JSON form): %j fails at %s', async (body, path) => {
    await refused(await core.post('/api/ingestion/sourcemaps', body), 400, 'validation_failed', path)
  })

  test('multipart: a file name longer than the JSON form allows is refused where it is, and nothing stored', async () => {
    const form = new FormData()
    form.append('release', 'long-name@1')
    form.append('ok', new File([JSON.stringify(map('ok.js'))], 'ok.js.map'))
    form.append('map', new File([JSON.stringify(map('x.js'))], `${'n'.repeat(1025)}.js.map`))
    const body = await refused(await upload(form), 400, 'validation_failed', '/map')
    expect(body.error.message).toContain('1024')
    expect(await stored('long-name@1')).toEqual([])
  })

  test('multipart without a release, without a map, with only scripts', async () => {
    const noRelease = new FormData()
    noRelease.append('file', new File([JSON.stringify(map('a.js'))], 'a.js.map'))
    await refused(await upload(noRelease), 400, 'validation_failed', '/release')
    const empty = new FormData()
    empty.append('release', 'r')
    await refused(await upload(empty), 400, 'validation_failed', '/files')
    const scripts = new FormData()
    scripts.append('release', 'r')
    scripts.append('file', new File(['console.log(1)'], 'a.js'))
    await refused(await upload(scripts), 400, 'validation_failed', '/files')
  })

  test('over the upload limit (5 MB): 413; no key: 401; GET: 405', async () => {
    const form = new FormData()
    form.append('release', 'big@1')
    form.append('file', new File([JSON.stringify(map('big.js', { sourcesContent: ['x'.repeat(5 * 1024 * 1024)] }))], 'big.js.map'))
    await refused(await upload(form), 413, 'payload_too_large')
    expect(await stored('big@1')).toEqual([])
    await refused(await upload(new FormData(), null), 401, 'missing_api_key')
    await refused(await core.request('/api/ingestion/sourcemaps'), 405, 'method_not_allowed')
  })

  test('a map just under the limit is accepted', async () => {
    const form = new FormData()
    form.append('release', 'big@2')
    form.append('file', new File([JSON.stringify(map('big.js', { sourcesContent: ['x'.repeat(4 * 1024 * 1024)] }))], 'big.js.map'))
    expect((await upload(form)).status).toBe(200)
    const [row] = await stored('big@2')
    expect(row.content.byteLength).toBeLessThan(row.size_bytes / 100)
  })

  test('a script beside the map is searched for its comments in linear time, however its lines run', async () => {
    const form = new FormData()
    form.append('release', 'lines@1')
    form.append('file', new File([JSON.stringify(map('app.js'))], 'app.js.map'))
    // Line breaks only: a comment pattern that lets its leading blanks span lines backtracks over
    // all of them from each line start (this script held the server for over ten seconds).
    form.append('file', new File(['\n'.repeat(120_000) + '\t//# debugId=85314830-023f-4cf1-a267-535f4e37bb17 \r\n'], 'app.js'))
    const started = performance.now()
    const res = await upload(form)
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(res.status).toBe(200)
    expect((await stored('lines@1')).map((r) => [r.url, r.debug_id])).toEqual([['app.js', '85314830023f4cf1a267535f4e37bb17']])
  })

  test('an upload of more small maps than one statement can bind is stored whole, and the next write goes through', async () => {
    const form = new FormData()
    form.append('release', 'many@1')
    const tiny = JSON.stringify({ version: 3, sources: [], names: [], mappings: '' })
    for (let i = 0; i < 10_000; i++) form.append('file', new File([tiny], `chunk-${i}.js.map`))
    const res = await upload(form)
    expect(res.status).toBe(200)
    expect((await res.json()).stored).toHaveLength(10_000)
    const [{ n }] = await core.database.db.rows<{ n: number }>(sql`select count(*)::int as n from sourcemaps where release = 'many@1'`)
    expect(n).toBe(10_000)
    expect((await core.post('/api/ingestion/customEvent', { sessionId: 's-after-maps', eventName: 'after' })).status).toBe(200)
  })
})

describe('which frames a stored map serves', () => {
  /** A map whose generated line 1, column 0 is line 2 of `source`. */
  const mapOf = (source: string, extra: object = {}) => ({ version: 3, sources: [source], names: [], mappings: 'AACA', ...extra })
  /** The original file an error thrown at line 1 of `file` maps to in `release`, or null. */
  const mappedSource = async (release: string, file: string) => {
    const res = await core.post('/api/ingestion/errors', { sessionId: 'maps-1', name: 'Error', message: 'boom', stack: `Error: boom\n    at e (${file}:1:1)`, release, timestampMs: Date.now() })
    expect(res.status).toBe(200)
    const [issueId] = ((await res.json()) as { issues: string[] }).issues
    const [row] = await core.database.db.rows<{ frames: { mapped?: { source: string } }[] }>(
      sql`select frames from error_events where issue_id = ${issueId} order by received_at desc limit 1`,
    )
    return row.frames[0].mapped?.source ?? null
  }
  const uploadJson = async (release: string, files: object[]) => {
    const res = await core.post('/api/ingestion/sourcemaps', { release, files })
    expect(res.status).toBe(200)
    return res.json()
  }

  test('a map whose `file` disagrees with its name serves both files (a script renamed after the build)', async () => {
    await uploadJson('m@1', [{ name: 'assets/app.3f2a1b9c.js.map', content: mapOf('src/app.ts', { file: 'app.js' }) }])
    expect(await mappedSource('m@1', 'https://shop.example/assets/app.3f2a1b9c.js')).toBe('src/app.ts')
    expect(await mappedSource('m@1', 'https://shop.example/assets/app.js')).toBe('src/app.ts')
    expect(await mappedSource('m@1', 'https://shop.example/assets/other.js')).toBeNull()
  })

  test('a map behind an XSSI guard line or a byte order mark is stored as plain JSON, and maps', async () => {
    await uploadJson('m@2', [
      { name: 'guarded.js.map', content: `)]}'\n${JSON.stringify(mapOf('src/guarded.ts'))}` },
      { name: 'bom.js.map', content: `\uFEFF${JSON.stringify(mapOf('src/bom.ts'))}` },
    ])
    expect((await stored('m@2')).map((row) => json(row).sources)).toEqual([['src/bom.ts'], ['src/guarded.ts']])
    expect(await mappedSource('m@2', 'https://shop.example/guarded.js')).toBe('src/guarded.ts')
    expect(await mappedSource('m@2', 'https://shop.example/bom.js')).toBe('src/bom.ts')
  })

  test('names with ../, absolute and Windows paths, or a query, are kept as paths and match by file name', async () => {
    const body = await uploadJson('m@3', [
      { name: '../dist/up.js.map', content: mapOf('src/up.ts') },
      { name: '/home/ci/shop/dist/assets/abs.js.map', content: mapOf('src/abs.ts') },
      { name: 'C:\\build\\dist\\win.js.map', content: mapOf('src/win.ts') },
      { name: 'query.js.map', content: mapOf('src/query.ts', { file: 'query.js?v=3' }) },
    ])
    expect(body.stored).toEqual(['../dist/up.js.map', 'home/ci/shop/dist/assets/abs.js.map', 'C:/build/dist/win.js.map', 'query.js.map'])
    expect(await mappedSource('m@3', 'https://shop.example/up.js')).toBe('src/up.ts')
    expect(await mappedSource('m@3', 'https://shop.example/assets/abs.js')).toBe('src/abs.ts')
    expect(await mappedSource('m@3', 'https://shop.example/win.js')).toBe('src/win.ts')
    expect(await mappedSource('m@3', 'https://shop.example/query.js?v=3')).toBe('src/query.ts')
    expect(await mappedSource('m@3', 'https://shop.example/query.js?v=4')).toBe('src/query.ts')
  })

  test('a map uploaded under a name with a query serves the file it names', async () => {
    await uploadJson('m@9', [{ name: 'assets/named.js.map?v=3', content: mapOf('src/named.ts') }])
    expect(await mappedSource('m@9', 'https://shop.example/assets/named.js')).toBe('src/named.ts')
    expect(await mappedSource('m@9', 'https://shop.example/assets/named.js?v=3')).toBe('src/named.ts')
  })

  test('a file named with spaces or non-ASCII letters maps the frames browsers write its URL in, percent-encoded', async () => {
    // Named as the build wrote it to disk (as upload-sourcemaps sends it); Chrome's stack names
    // `assets/Über uns-1a2b.js` as `assets/%C3%9Cber%20uns-1a2b.js`.
    await uploadJson('m@6', [
      { name: 'assets/Über uns-1a2b.js.map', content: mapOf('src/pages/Über uns.vue') },
      { name: 'assets/a%20b.js.map', content: mapOf('src/literal.ts') },
    ])
    expect(await mappedSource('m@6', 'https://shop.example/assets/%C3%9Cber%20uns-1a2b.js')).toBe('src/pages/Über uns.vue')
    expect(await mappedSource('m@6', 'https://shop.example/assets/%C3%9Cber%20uns-1a2b.js?v=2')).toBe('src/pages/Über uns.vue')
    // A name with a literal `%20` in it is served as `%2520`; a malformed escape is matched as it came.
    expect(await mappedSource('m@6', 'https://shop.example/assets/a%2520b.js')).toBe('src/literal.ts')
    expect(await mappedSource('m@6', 'https://shop.example/assets/%E0%A4%A.js')).toBeNull()
  })

  test('of maps that share a file name, the one whose path matches more of the frame\'s URL serves it, whatever the upload order', async () => {
    // A site with a root `app.js` and a widgets bundle `widgets/app.js`: both paths end the frame's
    // `/widgets/app.js`, and the first stored map served both.
    for (const [release, order] of [['m@7', ['app.js.map', 'widgets/app.js.map']], ['m@8', ['widgets/app.js.map', 'app.js.map']]] as const) {
      for (const name of order) await uploadJson(release, [{ name, content: mapOf(name === 'app.js.map' ? 'src/root.ts' : 'src/widgets.ts') }])
      expect(await mappedSource(release, 'https://shop.example/widgets/app.js')).toBe('src/widgets.ts')
      expect(await mappedSource(release, 'https://cdn.example/static/widgets/app.js?v=2')).toBe('src/widgets.ts')
      expect(await mappedSource(release, 'https://shop.example/app.js')).toBe('src/root.ts')
    }
  })

  test('the same map twice is one map, in two uploads or named twice in one; concurrent uploads of one name leave one of them, whole', async () => {
    await uploadJson('m@4', [{ name: 'twice.js.map', content: mapOf('src/twice.ts') }])
    await uploadJson('m@4', [{ name: 'twice.js.map', content: mapOf('src/twice.ts') }])
    expect(await stored('m@4')).toHaveLength(1)

    // One name twice in one upload: the later file is the map, as a later upload's would be, and is named once.
    expect(await uploadJson('m@6', [{ name: 'dup.js.map', content: mapOf('src/first.ts') }, { name: 'dup.js.map', content: mapOf('src/second.ts') }])).toEqual({ success: true, stored: ['dup.js.map'] })
    expect(await mappedSource('m@6', 'https://shop.example/dup.js')).toBe('src/second.ts')

    const sources = Array.from({ length: 8 }, (_, i) => `src/v${i}.ts`)
    await Promise.all(sources.map((source) => uploadJson('m@5', [{ name: 'race.js.map', content: mapOf(source) }])))
    const rows = await stored('m@5')
    expect(rows).toHaveLength(1)
    const [winner] = json(rows[0]).sources
    expect(sources).toContain(winner)
    expect(await mappedSource('m@5', 'https://shop.example/race.js')).toBe(winner)
  })
})

describe('picking a map among many', () => {
  test('a release of thousands of maps is searched by file name, not map by map for each frame', () => {
    const maps: SourceMapCandidate[] = Array.from({ length: 20_000 }, (_, i) => ({ release: 'big@1', name: `assets/chunk-${i}.js.map`, url: i % 2 ? `~/assets/chunk-${i}.js` : null, debugId: null }))
    maps.push({ release: 'big@1', name: 'other/chunk-7.js.map', url: null, debugId: '85314830023f4cf1a267535f4e37bb17' })
    const pick = sourceMapPicker(maps)
    const started = performance.now()
    for (let i = 0; i < 2_000; i++) pick(`https://shop.example/nowhere/file-${i}.js`, 'big@1', null)
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(pick('https://shop.example/assets/chunk-7.js?v=2', 'big@1', null)?.name).toBe('assets/chunk-7.js.map')
    expect(pick('https://shop.example/other/chunk-7.js', 'big@1', null)?.name).toBe('other/chunk-7.js.map')
    expect(pick('https://shop.example/x/chunk-8.js', 'big@1', '85314830023f4cf1a267535f4e37bb17')?.name).toBe('other/chunk-7.js.map')
    expect(pick('https://shop.example/assets/chunk-7.js', 'big@2', null)).toBeUndefined()
  })
})

describe('releases and names with lone surrogates (text cut inside an emoji)', () => {
  test('names stored as one (a lone surrogate is kept as U+FFFD) are one map of the upload, the last one', async () => {
    const res = await core.post('/api/ingestion/sourcemaps', {
      release: 'cut@1',
      files: [
        { name: 'cut\ud83d.js.map', content: map('first.js') },
        { name: 'cut\ud83e.js.map', content: map('second.js') },
      ],
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, stored: ['cut\ufffd.js.map'] })
    const rows = await stored('cut@1')
    expect(rows.map((r) => [r.name, r.url])).toEqual([['cut\ufffd.js.map', 'second.js']])
  })

  test('releases stored as one are one in the commit too: no failed commit to split', async () => {
    const database = await createTestDatabase()
    const { database: countedDatabase, transactions } = countedTransactions(database)
    const counted = await startCore({ database: countedDatabase, writer: { lingerMs: 50 } })
    try {
      const before = transactions()
      const statuses = await Promise.all(
        ['web@\ud83d', 'web@\ud83e', 'web@\udc00'].map((release, i) =>
          counted.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'app.js.map', content: map(`v${i}.js`) }] }).then((r) => r.status),
        ),
      )
      expect(statuses).toEqual([200, 200, 200])
      // One commit for the three; a commit upserting one map twice fails whole and is split.
      expect(transactions() - before).toBe(1)
      const rows = await counted.database.db.rows<{ release: string; name: string }>(sql`select release, name from sourcemaps`)
      expect(rows).toEqual([{ release: 'web@\ufffd', name: 'app.js.map' }])
    } finally {
      await counted.close()
      await database.close()
    }
  })
})
