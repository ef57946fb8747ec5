import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createRelay } from '@sightline/relay'
import { closedPortUrl } from './helpers'

// The tracker bundle is served first-party; these tests use their own small script.
const SCRIPT = '(function(){window.__sl=1})();\n'
const upstream = await closedPortUrl()
const dir = mkdtempSync(join(tmpdir(), 'relay-script-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('the tracker script', () => {
  const relay = createRelay({ upstream, prefix: '/_sl', script: { source: SCRIPT } })
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => relay(new Request(`http://shop.test${path}`, { method, headers }))

  test('is served at <prefix>/t.js with an ETag and caching headers', async () => {
    const res = await get('/_sl/t.js')
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(SCRIPT)
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{24}"$/)
    expect(res.headers.get('cache-control')).toBe('public, max-age=300, stale-while-revalidate=86400')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })

  test('answers 304 without a body when If-None-Match names its ETag (weak or in a list)', async () => {
    const etag = (await get('/_sl/t.js')).headers.get('etag')!
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await get('/_sl/t.js', { 'if-none-match': header })
      expect(res.status).toBe(304)
      expect(res.headers.get('etag')).toBe(etag)
      expect(await res.text()).toBe('')
    }
    expect((await get('/_sl/t.js', { 'if-none-match': '"stale"' })).status).toBe(200)
  })

  test('the ETag follows the content', async () => {
    const other = createRelay({ upstream, prefix: '/_sl', script: { source: `${SCRIPT}//v2` } })
    const a = (await get('/_sl/t.js')).headers.get('etag')
    const b = (await other(new Request('http://shop.test/_sl/t.js'))).headers.get('etag')
    expect(a).not.toBe(b)
  })

  test('HEAD has the headers and no body; POST is 405', async () => {
    const head = await get('/_sl/t.js', {}, 'HEAD')
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    const post = await get('/_sl/t.js', {}, 'POST')
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
  })

  test('the name is configurable; a file path is read once', async () => {
    const file = join(dir, 'bundle.js')
    writeFileSync(file, SCRIPT)
    const named = createRelay({ upstream, prefix: '/assets', script: { path: file, name: 'sl.min.js' } })
    const res = await named(new Request('http://shop.test/assets/sl.min.js'))
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(SCRIPT)
    expect((await named(new Request('http://shop.test/assets/t.js'))).status).toBe(404)
  })

  test('a file that cannot be read is reported as the relay is created, names the file looked for, and the script answers 404', async () => {
    const errors = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const missing = createRelay({ upstream, prefix: '/_sl', script: { path: join(dir, 'nope.js') } })
      // Reported by `ready` and on stderr before any page asks for the script.
      const reason = await missing.ready.then(() => null, (error: Error) => error.message)
      expect(reason).toStartWith('relay: /_sl/t.js cannot be served and answers 404: ')
      expect(reason).toContain(join(dir, 'nope.js'))
      expect(errors.mock.calls).toEqual([[reason]])
      const res = await missing(new Request('http://shop.test/_sl/t.js'))
      expect(res.status).toBe(404)
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'not_found' } })
      // A relative path is read from the working directory, and the report says which file that was.
      const relative = createRelay({ upstream, prefix: '/assets', script: { path: 'no/such/t.js', name: 'sl.js' } })
      const relativeReason = await relative.ready.then(() => null, (error: Error) => error.message)
      expect(relativeReason).toStartWith('relay: /assets/sl.js cannot be served')
      expect(relativeReason).toContain(join(process.cwd(), 'no/such/t.js'))
      // A directory is not a script either.
      expect(await createRelay({ upstream, prefix: '/_sl', script: { path: dir } }).ready.then(() => 'read', () => 'reported')).toBe('reported')
      expect(errors).toHaveBeenCalledTimes(3)
    } finally {
      errors.mockRestore()
    }
  })

  test('a readable script is ready once read, and a file: URL names it wherever the process runs (as import.meta.resolve gives it)', async () => {
    const file = join(dir, 'by-url.js')
    writeFileSync(file, SCRIPT)
    for (const path of [pathToFileURL(file).href, pathToFileURL(file)]) {
      const byUrl = createRelay({ upstream, prefix: '/_sl', script: { path } })
      await byUrl.ready
      expect(await (await byUrl(new Request('http://shop.test/_sl/t.js'))).text()).toBe(SCRIPT)
    }
    await createRelay({ upstream, prefix: '/_sl' }).ready
  })

  test('without a script option there is no script route', async () => {
    const plain = createRelay({ upstream, prefix: '/_sl' })
    expect((await plain(new Request('http://shop.test/_sl/t.js'))).status).toBe(404)
  })

  test('a script name that is not a plain file name is refused at start', () => {
    expect(() => createRelay({ upstream, prefix: '/_sl', script: { source: SCRIPT, name: '../t.js' } })).toThrow()
  })
})

describe('script options that would make an invalid Cache-Control', () => {
  test('a maxAgeSeconds that is not a whole number of seconds is refused at start (RFC 9111 §1.2.2: delta-seconds is 1*DIGIT)', () => {
    for (const maxAgeSeconds of [-1, 1.5, NaN, Infinity, '300']) {
      expect(() => createRelay({ upstream, prefix: '/_sl', script: { source: SCRIPT, maxAgeSeconds: maxAgeSeconds as number } })).toThrow(TypeError)
    }
    for (const maxAgeSeconds of [0, 60, 31_536_000]) {
      expect(() => createRelay({ upstream, prefix: '/_sl', script: { source: SCRIPT, maxAgeSeconds } })).not.toThrow()
    }
  })
})
