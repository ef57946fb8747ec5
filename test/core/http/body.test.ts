import { describe, expect, test } from 'bun:test'
import { deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import { Elysia } from 'elysia'
import { ApiError } from '@sightline/core/errors'
import { bodyParser, compressionOf, inflate } from '@sightline/core/http/body'
import { errorHandler } from '@sightline/core/http/errors'
import { createLogger } from '@sightline/core/log'

// The body parser on its own, with an echo route, so every rule is seen in isolation.
const limits = { maxBodyBytes: 4096, maxUploadBodyBytes: 16384 }
const app = new Elysia({ normalize: false })
  .use(errorHandler(createLogger('silent'), () => new Map()))
  .use(bodyParser(limits))
  .post('/api/ingestion/customEvent', ({ body }) => ({ body }))
  .post('/api/ingestion/events', ({ body }) => ({ size: JSON.stringify(body).length }))
  .post('/api/ingestion/sourcemaps', ({ body }) => ({ fields: Object.keys(body as object) }))

const send = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  app.handle(new Request(`http://localhost${path}`, { method: 'POST', body, headers }))

describe('body parsing', () => {
  test.each([['application/json'], ['text/plain;charset=UTF-8'], ['']])('JSON whatever the Content-Type (%p)', async (contentType) => {
    const res = await send('/api/ingestion/customEvent', '{"eventName":"a"}', contentType ? { 'content-type': contentType } : {})
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ body: { eventName: 'a' } })
  })

  test('gzip and deflate by Content-Encoding, and gzip by ?compression= for beacons', async () => {
    const json = JSON.stringify({ eventName: 'zipped', n: 1 })
    for (const [body, headers, query] of [
      [gzipSync(json), { 'content-encoding': 'gzip' }, ''],
      [deflateSync(json), { 'content-encoding': 'deflate' }, ''],
      [deflateRawSync(json), { 'content-encoding': 'deflate' }, ''],
      [gzipSync(json), { 'content-type': 'text/plain' }, '?compression=gzip'],
    ] as const) {
      const res = await send(`/api/ingestion/customEvent${query}`, body, headers)
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ body: { eventName: 'zipped', n: 1 } })
    }
  })

  test('Content-Encoding is a list of codings: "gzip, identity" is gzip; an empty header leaves ?compression= to say it', async () => {
    const json = JSON.stringify({ eventName: 'listed' })
    for (const [headers, query] of [
      [{ 'content-encoding': 'gzip, identity' }, ''],
      [{ 'content-encoding': 'identity , GZIP' }, ''],
      [{ 'content-encoding': 'gzip,' }, ''],
      [{ 'content-encoding': '' }, '?compression=gzip'],
      [{ 'content-encoding': ' ' }, '?compression=gzip'],
    ] as const) {
      const res = await send(`/api/ingestion/customEvent${query}`, gzipSync(json), headers)
      expect([headers, res.status]).toEqual([headers, 200])
      expect(await res.json()).toEqual({ body: { eventName: 'listed' } })
    }
    // Two codings stacked are none we take: 415, saying which are.
    const stacked = await send('/api/ingestion/customEvent', gzipSync(gzipSync(json)), { 'content-encoding': 'gzip, gzip' })
    expect(stacked.status).toBe(415)
    expect(stacked.headers.get('accept-encoding')).toBe('gzip, deflate')
  })

  test('413 from Content-Length, before the body is read', async () => {
    let pulled = 0
    const stream = new ReadableStream({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(1024))
      },
    })
    const res = await app.handle(
      new Request('http://localhost/api/ingestion/customEvent', { method: 'POST', body: stream, headers: { 'content-length': '999999' } }),
    )
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'payload_too_large' } })
    expect(pulled).toBeLessThanOrEqual(1)
  })

  test('413 when a body without Content-Length streams past the limit', async () => {
    let sent = 0
    const stream = new ReadableStream({
      pull(controller) {
        sent += 1024
        controller.enqueue(new TextEncoder().encode(' '.repeat(1024)))
        if (sent > 1_000_000) controller.close()
      },
    })
    const res = await send('/api/ingestion/customEvent', stream)
    expect(res.status).toBe(413)
    expect(sent).toBeLessThan(64 * 1024)
  })

  test('the large routes take larger bodies', async () => {
    const big = JSON.stringify({ events: [{ data: 'x'.repeat(8000) }] })
    expect((await send('/api/ingestion/customEvent', big)).status).toBe(413)
    expect((await send('/api/ingestion/events', big)).status).toBe(200)
  })

  test('a zip bomb gets 413, not an out-of-memory', async () => {
    const bomb = gzipSync(Buffer.alloc(10_000_000, 32))
    expect(bomb.byteLength).toBeLessThan(limits.maxUploadBodyBytes)
    const res = await send('/api/ingestion/events', bomb, { 'content-encoding': 'gzip' })
    expect(res.status).toBe(413)
    expect((await res.json()).error.message).toContain('inflated')
  })

  test('bad bodies get invalid_json', async () => {
    for (const [body, headers] of [
      ['{"eventName":', {}],
      ['', {}],
      [new Uint8Array([1, 2, 3, 4]), { 'content-encoding': 'gzip' }],
    ] as const) {
      const res = await send('/api/ingestion/customEvent', body, headers)
      expect(res.status).toBe(400)
      const answer = await res.json()
      expect(answer).toMatchObject({ success: false, error: { code: 'invalid_json' } })
      expect(JSON.stringify(answer)).not.toContain('at ')
    }
  })

  test('an unknown Content-Encoding is refused clearly, naming the ones taken (RFC 9110 §15.5.16)', async () => {
    const res = await send('/api/ingestion/customEvent', '{}', { 'content-encoding': 'br' })
    expect(res.status).toBe(415)
    expect(res.headers.get('accept-encoding')).toBe('gzip, deflate')
    expect((await res.json()).error.code).toBe('unsupported_encoding')
  })

  test('multipart uploads arrive as fields', async () => {
    const form = new FormData()
    form.append('release', '1.0.0')
    form.append('file', new File(['{}'], 'a.js.map'))
    form.append('file', new File(['{}'], 'b.js.map'))
    const res = await send('/api/ingestion/sourcemaps', form)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ fields: ['release', 'file'] })
  })

  test('a multipart body that cannot be read is a validation failure of the whole body, in WIRE.md\'s shape', async () => {
    const res = await send('/api/ingestion/sourcemaps', '--x\r\nnot a part', { 'content-type': 'multipart/form-data; boundary=x' })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ success: false, error: { code: 'validation_failed', message: 'the multipart body could not be read' }, path: '/' })
  })

  test('many fields of one name are read in linear time; a field named __proto__ is a field', async () => {
    const big = new Elysia()
      .use(bodyParser({ maxBodyBytes: 4096, maxUploadBodyBytes: 8 * 1024 * 1024 }))
      .post('/api/ingestion/sourcemaps', ({ body }) => {
        const fields = body as Record<string, unknown>
        return { keys: Object.keys(fields), files: (fields.file as unknown[]).length, prototype: Object.getPrototypeOf(fields) === Object.prototype }
      })
    let body = '--x\r\nContent-Disposition: form-data; name="__proto__"; filename="p.map"\r\n\r\n{}\r\n'
    for (let i = 0; i < 80_000; i++) body += '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\n1\r\n'
    const started = performance.now()
    const res = await big.handle(
      new Request('http://localhost/api/ingestion/sourcemaps', { method: 'POST', body: `${body}--x--\r\n`, headers: { 'content-type': 'multipart/form-data; boundary=x' } }),
    )
    expect(await res.json()).toEqual({ keys: ['__proto__', 'file'], files: 80_000, prototype: true })
    expect(performance.now() - started).toBeLessThan(3_000)
  })
})

describe('body helpers', () => {
  test('compressionOf prefers the header and refuses the unknown', () => {
    expect(compressionOf(null, undefined)).toBeNull()
    expect(compressionOf('identity', undefined)).toBeNull()
    expect(compressionOf('GZIP', undefined)).toBe('gzip')
    expect(compressionOf(null, 'gzip')).toBe('gzip')
    expect(compressionOf('deflate', 'gzip')).toBe('deflate')
    expect(() => compressionOf('zstd', undefined)).toThrow(ApiError)
  })

  test('inflate stops at the cap', () => {
    const data = gzipSync(Buffer.alloc(10_000, 1))
    expect(inflate(data, 'gzip', 10_000).byteLength).toBe(10_000)
    expect(() => inflate(data, 'gzip', 9_999)).toThrow(/over the limit/)
  })
})
