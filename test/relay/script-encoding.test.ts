import { afterAll, describe, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { createRelay } from '@sightline/relay'
import { closedPortUrl, rawRequest, startRelay, type AdapterName } from './helpers'

// The tracker bundle is about 88 KB and compresses to about a third: it is sent gzipped to every
// client that accepts it, and as it is to the others. A script of the same kind, generated here.
const SCRIPT = `(function(){${Array.from({ length: 3000 }, (_, i) => `window.__sl${i % 40}=(window.__sl${i % 40}||0)+${i};`).join('')}})();\n`
const bytes = new TextEncoder().encode(SCRIPT)
const upstream = await closedPortUrl()

const relay = createRelay({ upstream, prefix: '/_sl', script: { source: SCRIPT } })
const get = (headers: Record<string, string> = {}, method = 'GET') => relay(new Request('http://shop.test/_sl/t.js', { method, headers }))
const identityTag = (await get()).headers.get('etag')!
const gzipTag = (await get({ 'accept-encoding': 'gzip' })).headers.get('etag')!

describe('the tracker script, gzipped', () => {
  test('goes out gzipped, with its own ETag, its length and Vary, to a client that accepts gzip', async () => {
    const res = await get({ 'accept-encoding': 'gzip, deflate, br' })
    const body = new Uint8Array(await res.arrayBuffer())
    expect(res.status).toBe(200)
    expect(res.headers.get('content-encoding')).toBe('gzip')
    expect(res.headers.get('vary')).toBe('Accept-Encoding')
    expect(res.headers.get('content-length')).toBe(String(body.byteLength))
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(body.byteLength).toBeLessThan(bytes.byteLength / 4)
    expect(new TextDecoder().decode(gunzipSync(body))).toBe(SCRIPT)
    expect(gzipTag).toMatch(/^"[0-9a-f]{24}"$/)
    expect(gzipTag).not.toBe(identityTag)
  })

  test('goes out as it is, with Vary, to a client that does not accept gzip', async () => {
    for (const accept of [null, 'identity', 'gzip;q=0', 'br, gzip;q=0, *', '*;q=0', 'deflate', 'gzip;q=nonsense']) {
      const res = await get(accept === null ? {} : { 'accept-encoding': accept })
      expect({ accept, encoding: res.headers.get('content-encoding'), etag: res.headers.get('etag'), vary: res.headers.get('vary') }).toEqual({
        accept,
        encoding: null,
        etag: identityTag,
        vary: 'Accept-Encoding',
      })
      expect(await res.text()).toBe(SCRIPT)
    }
  })

  test('reads Accept-Encoding as RFC 9110 says: a weight above 0, any case, x-gzip, or "*" when gzip is not named', async () => {
    for (const accept of ['GZIP', 'br;q=1, gzip;q=0.5', '*', 'deflate, *;q=0.1', 'x-gzip', ' gzip ; q=1.0 ']) {
      const res = await get({ 'accept-encoding': accept })
      expect({ accept, encoding: res.headers.get('content-encoding'), etag: res.headers.get('etag') }).toEqual({ accept, encoding: 'gzip', etag: gzipTag })
    }
  })

  test("a revalidation matching either variant's tag, strong or weak, is 304 with the tag the client holds", async () => {
    const cases = [
      { accept: 'gzip', ifNoneMatch: gzipTag, etag: gzipTag },
      { accept: 'gzip', ifNoneMatch: `W/${gzipTag}`, etag: gzipTag },
      { accept: 'gzip', ifNoneMatch: identityTag, etag: identityTag },
      { accept: 'gzip', ifNoneMatch: `"other", W/${identityTag}`, etag: identityTag },
      { accept: '', ifNoneMatch: gzipTag, etag: gzipTag },
      { accept: '', ifNoneMatch: `W/${identityTag}`, etag: identityTag },
      // Both listed: the one that would be sent now.
      { accept: 'gzip', ifNoneMatch: `${identityTag}, ${gzipTag}`, etag: gzipTag },
      { accept: '', ifNoneMatch: `${gzipTag}, ${identityTag}`, etag: identityTag },
      { accept: 'gzip', ifNoneMatch: '*', etag: gzipTag },
      { accept: '', ifNoneMatch: '*', etag: identityTag },
    ]
    for (const { accept, ifNoneMatch, etag } of cases) {
      for (const method of ['GET', 'HEAD']) {
        const res = await get({ 'accept-encoding': accept, 'if-none-match': ifNoneMatch }, method)
        expect({ method, ifNoneMatch, status: res.status, etag: res.headers.get('etag'), vary: res.headers.get('vary'), body: await res.text() }).toEqual({
          method,
          ifNoneMatch,
          status: 304,
          etag,
          vary: 'Accept-Encoding',
          body: '',
        })
      }
    }
    const stale = await get({ 'accept-encoding': 'gzip', 'if-none-match': '"stale", W/"older"' })
    expect({ status: stale.status, etag: stale.headers.get('etag') }).toEqual({ status: 200, etag: gzipTag })
  })

  test('HEAD answers the headers GET would, for either variant, without a body', async () => {
    for (const accept of ['gzip', '']) {
      const [head, full] = [await get({ 'accept-encoding': accept }, 'HEAD'), await get({ 'accept-encoding': accept })]
      expect(head.status).toBe(200)
      expect(Object.fromEntries(head.headers)).toEqual(Object.fromEntries(full.headers))
      expect(await head.text()).toBe('')
    }
  })

  test('is compressed once, when the relay is created, not per request', async () => {
    const Original = globalThis.CompressionStream
    let made = 0
    globalThis.CompressionStream = class extends Original {
      constructor(format: CompressionFormat) {
        super(format)
        made++
      }
    }
    try {
      const counted = createRelay({ upstream, prefix: '/_sl', script: { source: `${SCRIPT}//counted` } })
      await counted.ready
      for (let i = 0; i < 5; i++) await counted(new Request('http://shop.test/_sl/t.js', { headers: { 'accept-encoding': 'gzip' } })).then((r) => r.arrayBuffer())
      expect(made).toBe(1)
    } finally {
      globalThis.CompressionStream = Original
    }
  })

  test('a script gzip would not shrink is only sent as it is', async () => {
    const tiny = createRelay({ upstream, prefix: '/_sl', script: { source: 'window.a=1' } })
    const res = await tiny(new Request('http://shop.test/_sl/t.js', { headers: { 'accept-encoding': 'gzip' } }))
    expect(res.headers.get('content-encoding')).toBeNull()
    expect(await res.text()).toBe('window.a=1')
  })
})

// The same bytes on the wire, through the servers the adapters run on (Bun's and node:http).
for (const adapter of ['bun', 'node', 'elysia', 'standalone'] as AdapterName[]) {
  describe(`${adapter}: the script over HTTP`, () => {
    let server: Awaited<ReturnType<typeof startRelay>>
    test('starts', async () => {
      server = await startRelay(adapter, { upstream, prefix: '/_sl', script: { source: SCRIPT } })
    })
    afterAll(() => server?.close())

    test('is sent gzipped with Content-Encoding and its exact length, or as it is', async () => {
      const gz = await rawRequest(server.url, 'GET /_sl/t.js HTTP/1.1\r\nHost: shop.test\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n')
      const body = Buffer.from(gz.text, 'latin1')
      expect({ status: gz.status, encoding: gz.headers['content-encoding'], vary: gz.headers.vary, etag: gz.headers.etag }).toEqual({
        status: 200,
        encoding: 'gzip',
        vary: 'Accept-Encoding',
        etag: gzipTag,
      })
      expect(Number(gz.headers['content-length'])).toBe(body.byteLength)
      expect(gunzipSync(body).toString()).toBe(SCRIPT)

      const plain = await rawRequest(server.url, 'GET /_sl/t.js HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n')
      expect({ length: plain.headers['content-length'], etag: plain.headers.etag }).toEqual({ length: String(bytes.byteLength), etag: identityTag })
      expect(plain.headers['content-encoding']).toBeUndefined()
      expect(plain.text).toBe(SCRIPT)
    })

    test('HEAD says what GET would send; a revalidation is 304', async () => {
      const head = await rawRequest(server.url, 'HEAD /_sl/t.js HTTP/1.1\r\nHost: shop.test\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n')
      expect({ status: head.status, encoding: head.headers['content-encoding'], etag: head.headers.etag, body: head.text }).toEqual({ status: 200, encoding: 'gzip', etag: gzipTag, body: '' })
      const gz = await rawRequest(server.url, 'GET /_sl/t.js HTTP/1.1\r\nHost: shop.test\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n')
      expect(head.headers['content-length']).toBe(gz.headers['content-length'])
      const revalidated = await rawRequest(server.url, `GET /_sl/t.js HTTP/1.1\r\nHost: shop.test\r\nAccept-Encoding: gzip\r\nIf-None-Match: W/${gzipTag}\r\nConnection: close\r\n\r\n`)
      expect({ status: revalidated.status, etag: revalidated.headers.etag, body: revalidated.text }).toEqual({ status: 304, etag: gzipTag, body: '' })
    })
  })
}
