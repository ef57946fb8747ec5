import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { UPLOAD_ATTEMPTS, findSourceMaps, inlineSourceMap, uploadSourcemaps, type UploadIo } from '../../tracker/bin/upload'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sourcemaps-'))
  await mkdir(join(dir, 'assets', 'chunks'), { recursive: true })
  const map = (file: string) => JSON.stringify({ version: 3, file, sources: ['src/app.ts'], names: [], mappings: 'AAAA' })
  await writeFile(join(dir, 'assets', 'app.js'), 'console.log(1)\n//# sourceMappingURL=app.js.map')
  await writeFile(join(dir, 'assets', 'app.js.map'), map('app.js'))
  await writeFile(join(dir, 'assets', 'chunks', 'vendor.js.map'), map('vendor.js'))
  await writeFile(join(dir, 'index.html'), '<html></html>')
})
afterAll(() => rm(dir, { recursive: true, force: true }))

interface Upload {
  url: string
  authorization: string | null
  release: FormDataEntryValue | null
  files: { name: string; text: string }[]
}

/** Runs the command against answers given per call; keeps what each request carried. */
async function run(argv: string[], answer: (n: number) => Response | Error = () => Response.json({ success: true, stored: [] }), options: { tty?: boolean; env?: Record<string, string> } = {}) {
  const uploads: Upload[] = []
  const sleeps: number[] = []
  let out = ''
  let err = ''
  const io: UploadIo = {
    async fetch(url, init) {
      const form = await new Request(url, init).formData()
      const files = await Promise.all(form.getAll('file').map(async (file) => ({ name: (file as File).name, text: await (file as File).text() })))
      uploads.push({ url, authorization: new Headers(init.headers).get('authorization'), release: form.get('release'), files })
      const reply = answer(uploads.length - 1)
      if (reply instanceof Error) throw reply
      return reply
    },
    out: { write: (text: string) => (out += text), isTTY: options.tty },
    err: { write: (text: string) => (err += text) },
    env: options.env ?? {},
    sleep: async (ms) => void sleeps.push(ms),
  }
  const code = await uploadSourcemaps(argv, io)
  return { code, uploads, sleeps, out, err }
}

describe('upload-sourcemaps', () => {
  test('finds the .map files under DIR, with their paths relative to it', async () => {
    expect((await findSourceMaps(dir)).map((map) => map.name)).toEqual(['assets/app.js.map', 'assets/chunks/vendor.js.map'])
  })

  test('symbolic links are followed to maps and folders, each folder once, so a link back up the tree ends', async () => {
    const linked = await mkdtemp(join(tmpdir(), 'linked-maps-'))
    const map = (file: string) => JSON.stringify({ version: 3, file, sources: ['src/app.ts'], names: [], mappings: 'AAAA' })
    try {
      await mkdir(join(linked, 'dist', 'assets'), { recursive: true })
      await mkdir(join(linked, 'shared'))
      await writeFile(join(linked, 'dist', 'assets', 'app.js.map'), map('app.js'))
      await writeFile(join(linked, 'shared', 'vendor.js.map'), map('vendor.js'))
      await writeFile(join(linked, 'elsewhere.js.map'), map('elsewhere.js'))
      await symlink(join(linked, 'elsewhere.js.map'), join(linked, 'dist', 'assets', 'linked.js.map'))
      await symlink(join(linked, 'shared'), join(linked, 'dist', 'vendor'))
      await symlink(join(linked, 'dist'), join(linked, 'dist', 'assets', 'loop'))
      await symlink(join(linked, 'gone.js.map'), join(linked, 'dist', 'dangling.js.map'))
      expect((await findSourceMaps(join(linked, 'dist'))).map((m) => m.name)).toEqual(['assets/app.js.map', 'assets/linked.js.map', 'vendor/vendor.js.map'])
      const { code, uploads, err } = await run(['--release', 'r', '--api-key', 'k', join(linked, 'dist')])
      expect({ code, err }).toEqual({ code: 0, err: '' })
      expect(uploads.map((u) => JSON.parse(u.files[0].text).file)).toEqual(['app.js', 'elsewhere.js', 'vendor.js'])
    } finally {
      await rm(linked, { recursive: true, force: true })
    }
  })

  test('maps inlined in scripts as data: URLs (base64 or not) are found and named <script>.map', async () => {
    const inline = await mkdtemp(join(tmpdir(), 'inline-maps-'))
    const map = (file: string) => JSON.stringify({ version: 3, file, sources: ['src/app.ts'], names: [], mappings: 'AAAA' })
    await writeFile(join(inline, 'app.js'), `console.log(1)\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${Buffer.from(map('app.js')).toString('base64')}\n`)
    await writeFile(join(inline, 'plain.mjs'), `console.log(2)\n//# sourceMappingURL=data:application/json,${encodeURIComponent(map('plain.mjs'))}`)
    // A script with a map file beside it, or with a map by URL, or none: nothing inline to take.
    await writeFile(join(inline, 'linked.js'), `console.log(3)\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(map('stale')).toString('base64')}`)
    await writeFile(join(inline, 'linked.js.map'), map('linked.js'))
    await writeFile(join(inline, 'other.js'), 'console.log(4)\n//# sourceMappingURL=other.js.map')
    try {
      const found = await findSourceMaps(inline)
      expect(found.map((m) => m.name)).toEqual(['app.js.map', 'linked.js.map', 'plain.mjs.map'])
      expect(await Promise.all(found.map(async (m) => JSON.parse(Buffer.from(await m.read()).toString()).file))).toEqual(['app.js', 'linked.js', 'plain.mjs'])
      const { code, uploads } = await run(['--release', 'r', '--api-key', 'k', inline])
      expect(code).toBe(0)
      expect(uploads.map((u) => JSON.parse(u.files[0].text).file)).toEqual(['app.js', 'linked.js', 'plain.mjs'])
    } finally {
      await rm(inline, { recursive: true, force: true })
    }
  })

  test('a script with long runs of blank lines is read in linear time', () => {
    // Whitespace that may cross lines before the comment made each blank line rescan all that follow:
    // 40,000 of them took over a second, 100,000 several.
    const script = 'console.log(1)' + '\n'.repeat(100_000) + '//# sourceMappingURL=data:application/json,%7B%7D\n' + '\n'.repeat(100_000)
    const started = performance.now()
    expect(inlineSourceMap(script)).toBe('{}')
    expect(inlineSourceMap('\n'.repeat(100_000))).toBeNull()
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('uploads each map with the release to /api/ingestion/sourcemaps, key as Bearer; progress and a summary', async () => {
    const { code, uploads, out, err } = await run(['--release', 'web@1.4.0', '--api-key', 'sl_live_k', '--url', 'https://shop.example/_sl/', dir])
    expect(code).toBe(0)
    expect(err).toBe('')
    expect(uploads.map((u) => [u.url, u.authorization, u.release, u.files.map((f) => f.name)])).toEqual([
      ['https://shop.example/_sl/api/ingestion/sourcemaps', 'Bearer sl_live_k', 'web@1.4.0', ['assets/app.js.map']],
      ['https://shop.example/_sl/api/ingestion/sourcemaps', 'Bearer sl_live_k', 'web@1.4.0', ['assets/chunks/vendor.js.map']],
    ])
    expect(JSON.parse(uploads[0].files[0].text)).toMatchObject({ version: 3, file: 'app.js' })
    expect(out).toBe('[1/2] assets/app.js.map ok\n[2/2] assets/chunks/vendor.js.map ok\nuploaded 2 source maps for release web@1.4.0 to https://shop.example/_sl\n')
  })

  test('on a terminal, one progress bar redrawn in place', async () => {
    const { out } = await run(['--release', 'r', '--api-key', 'k', dir], undefined, { tty: true })
    expect(out).toContain('\r[############------------] 1/2 assets/app.js.map')
    expect(out).toContain('\r[########################] 2/2 assets/chunks/vendor.js.map\x1b[K\n')
  })

  test('the key and base from the environment; default base http://localhost:8000', async () => {
    const { code, uploads } = await run(['--release', 'r', dir], undefined, { env: { SIGHTLINE_API_KEY: 'sl_env' } })
    expect(code).toBe(0)
    expect(uploads[0].url).toBe('http://localhost:8000/api/ingestion/sourcemaps')
    expect(uploads[0].authorization).toBe('Bearer sl_env')
  })

  test('transient failures (network, 5xx, 408) are retried with backoff, honouring Retry-After', async () => {
    const replies = [new TypeError('fetch failed'), new Response('', { status: 503, headers: { 'retry-after': '3' } }), new Response('', { status: 408 })]
    const { code, uploads, sleeps } = await run(['--release', 'r', '--api-key', 'k', dir], (n) => replies[n] ?? Response.json({ success: true }))
    expect(code).toBe(0)
    expect(uploads).toHaveLength(5)
    expect(sleeps).toEqual([500, 3000, 2000])
  })

  test('a map the service refuses: exit 1, the reason from the error body, the other maps still go', async () => {
    const refuse = Response.json({ success: false, error: { code: 'validation_failed', message: 'not a source map' } }, { status: 400 })
    const { code, uploads, err, out } = await run(['--release', 'r', '--api-key', 'k', dir], (n) => (n === 0 ? refuse : Response.json({ success: true })))
    expect(code).toBe(1)
    expect(uploads).toHaveLength(2)
    expect(out).toContain('[1/2] assets/app.js.map failed')
    expect(err).toBe('upload-sourcemaps: 1 of 2 source maps failed to upload:\n  assets/app.js.map: 400 validation_failed: not a source map\n')
  })

  test('a map gone by the time its turn comes fails alone, named, and the others still go', async () => {
    const vanishing = await mkdtemp(join(tmpdir(), 'vanishing-maps-'))
    const map = (file: string) => JSON.stringify({ version: 3, file, sources: ['src/app.ts'], names: [], mappings: 'AAAA' })
    try {
      for (const name of ['a.js', 'b.js', 'c.js']) await writeFile(join(vanishing, `${name}.map`), map(name))
      // Removed while the first is uploading, as a build still writing the folder might.
      const { code, uploads, err } = await run(['--release', 'r', '--api-key', 'k', vanishing], (n) => {
        if (n === 0) rmSync(join(vanishing, 'b.js.map'))
        return Response.json({ success: true })
      })
      expect(code).toBe(1)
      expect(uploads.map((u) => u.files[0].name)).toEqual(['a.js.map', 'c.js.map'])
      expect(err).toStartWith('upload-sourcemaps: 1 of 3 source maps failed to upload:\n  b.js.map: cannot read it: ENOENT')
    } finally {
      await rm(vanishing, { recursive: true, force: true })
    }
  })

  test(`a service that stays down: exit 1 after ${UPLOAD_ATTEMPTS} attempts per map`, async () => {
    const { code, uploads, err } = await run(['--release', 'r', '--api-key', 'k', dir], () => new TypeError('connect ECONNREFUSED'))
    expect(code).toBe(1)
    expect(uploads).toHaveLength(2 * UPLOAD_ATTEMPTS)
    expect(err).toContain(`assets/app.js.map: network error: connect ECONNREFUSED (after ${UPLOAD_ATTEMPTS} attempts)`)
  })

  test('a service that takes the request and never answers: each attempt times out, exit 1, not a hang', async () => {
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      let err = ''
      const code = await uploadSourcemaps(['--release', 'r', '--api-key', 'k', '--url', `http://127.0.0.1:${silent.port}`, join(dir, 'assets', 'chunks')], {
        fetch: (input, init) => fetch(input, init),
        out: { write: () => {} },
        err: { write: (text: string) => (err += text) },
        env: {},
        sleep: async () => {},
        timeoutMs: 100,
      })
      expect(code).toBe(1)
      expect(err).toMatch(new RegExp(`vendor\\.js\\.map: network error: .*(timed out|timeout).* \\(after ${UPLOAD_ATTEMPTS} attempts\\)`))
    } finally {
      silent.stop(true)
    }
  })

  test('usage errors: exit 2 with the reason and the usage; --help: exit 0', async () => {
    for (const [argv, reason] of [
      [['--api-key', 'k', dir], '--release is required'],
      [['--release', 'r', dir], '--api-key (or SIGHTLINE_API_KEY) is required'],
      [['--release', 'r', '--api-key', 'k'], 'give exactly one directory'],
      [['--release', 'r', '--api-key', 'k', '--url', 'ftp://x', dir], '--url must be an http(s) URL, not "ftp://x"'],
      [['--release', 'r', '--api-key', 'k', '--nope', dir], "Unknown option '--nope'"],
    ] as const) {
      const { code, err, uploads } = await run([...argv])
      expect(code).toBe(2)
      expect(err).toStartWith(`upload-sourcemaps: ${reason}`)
      expect(err).toContain('usage: upload-sourcemaps')
      expect(uploads).toEqual([])
    }
    const help = await run(['--help'])
    expect(help.code).toBe(0)
    expect(help.out).toContain('usage: upload-sourcemaps --release R --api-key K [--url BASE] DIR')
  })

  test('a directory without maps, or none at all: exit 1 with a clear message', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'no-maps-'))
    expect(await run(['--release', 'r', '--api-key', 'k', empty])).toMatchObject({ code: 1, err: `upload-sourcemaps: no .map files or inline source maps under ${empty}\n` })
    const missing = await run(['--release', 'r', '--api-key', 'k', join(empty, 'missing')])
    expect(missing.code).toBe(1)
    expect(missing.err).toStartWith(`upload-sourcemaps: cannot read ${join(empty, 'missing')}: ENOENT`)
    await rm(empty, { recursive: true })
  })
})
