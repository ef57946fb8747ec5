import { describe, expect, test } from 'bun:test'
import { bearerToken, canCarryKey, connectionOptions, forwardingHeaders, shouldMoveKey, upstreamHeaders, writeKeyIntoBody } from '@sightline/relay/headers'
import { isForwardedPath, normalizePrefix, splitUrl, underPrefix } from '@sightline/relay/paths'

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (value: Uint8Array | null) => (value === null ? null : new TextDecoder().decode(value))

describe('header rules', () => {
  test('fields named by Connection are hop-by-hop too; close and keep-alive are not names', () => {
    expect(connectionOptions('keep-alive, X-Trace ,close')).toEqual(new Set(['x-trace']))
    expect(connectionOptions('close')).toBeNull()
    expect(connectionOptions(null)).toBeNull()
  })

  test('upstream headers: dropped fields out, forwarding fields set, Authorization only when asked', () => {
    const incoming = new Headers({
      host: 'shop.test',
      connection: 'x-trace',
      'x-trace': '1',
      upgrade: 'websocket',
      'transfer-encoding': 'chunked',
      'content-length': '12',
      expect: '100-continue',
      cookie: 'a=b',
      authorization: 'Bearer k',
      'user-agent': 'ua',
      'x-forwarded-for': '203.0.113.1',
    })
    const list = upstreamHeaders(incoming, { address: '10.0.0.2' }, { proto: 'https', host: 'shop.test' }, true)
    expect(Object.fromEntries(list)).toEqual({
      'user-agent': 'ua',
      'x-forwarded-for': '203.0.113.1, 10.0.0.2',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'shop.test',
      // Asked for, not left to the client: fetch would ask for gzip itself and inflate the answer.
      'accept-encoding': 'identity',
    })
    expect(Object.fromEntries(upstreamHeaders(incoming, {}, { proto: 'http', host: '' }, false)).authorization).toBe('Bearer k')
  })

  test("the client's own word on its address goes no further: Forwarded, X-Real-IP and the like are dropped, no Forwarded is written", () => {
    const incoming = new Headers({
      forwarded: 'for=8.8.8.8;proto=https;host=evil.test',
      'x-real-ip': '8.8.8.8',
      'x-client-ip': '8.8.8.8',
      'true-client-ip': '8.8.8.8',
      'cf-connecting-ip': '8.8.8.8',
      'fastly-client-ip': '8.8.8.8',
      'x-cluster-client-ip': '8.8.8.8',
      'x-forwarded-for': '8.8.8.8',
      'user-agent': 'ua',
    })
    expect(Object.fromEntries(upstreamHeaders(incoming, { address: '198.51.100.7' }, { proto: 'https', host: 'shop.test' }, false))).toEqual({
      'user-agent': 'ua',
      // Appended, not replaced: readers take the entry right of the peer only when they trust the peer.
      'x-forwarded-for': '8.8.8.8, 198.51.100.7',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'shop.test',
      'accept-encoding': 'identity',
    })
  })

  test('X-Forwarded-For: appended, started, or kept when the address is unknown', () => {
    expect(forwardingHeaders('1.1.1.1', '2.2.2.2', 'http', 'h')[0]).toEqual(['x-forwarded-for', '1.1.1.1, 2.2.2.2'])
    expect(forwardingHeaders(null, '2.2.2.2', 'http', 'h')[0]).toEqual(['x-forwarded-for', '2.2.2.2'])
    // A runtime that tells addresses but had none for this request: the list must not end in the client's own entry.
    expect(forwardingHeaders('1.1.1.1', null, 'http', 'h')[0]).toEqual(['x-forwarded-for', '1.1.1.1, unknown'])
    expect(forwardingHeaders(null, null, 'http', 'h')[0]).toEqual(['x-forwarded-for', 'unknown'])
    expect(forwardingHeaders('1.1.1.1', undefined, 'http', null)).toEqual([
      ['x-forwarded-for', '1.1.1.1'],
      ['x-forwarded-proto', 'http'],
    ])
  })

  test('bearer tokens', () => {
    expect(bearerToken('Bearer abc')).toBe('abc')
    expect(bearerToken('  bearer   abc ')).toBe('abc')
    expect(bearerToken('Basic abc')).toBeNull()
    expect(bearerToken('Bearer a b')).toBeNull()
    expect(bearerToken(null)).toBeNull()
  })

  test('when the key may move', () => {
    const body = { method: 'POST', contentLength: 100, contentEncoding: null, queryCompression: false, hasBearer: true }
    expect(shouldMoveKey('auto', body)).toBe(true)
    expect(shouldMoveKey('auto', { ...body, contentLength: 64 * 1024 })).toBe(true)
    expect(shouldMoveKey('auto', { ...body, contentLength: 64 * 1024 + 1 })).toBe(false)
    expect(shouldMoveKey('always', { ...body, contentLength: 10_000_000 })).toBe(true)
    expect(shouldMoveKey('never', body)).toBe(false)
    expect(shouldMoveKey('auto', { ...body, contentEncoding: 'gzip' })).toBe(false)
    expect(shouldMoveKey('always', { ...body, contentEncoding: 'deflate' })).toBe(false)
    expect(shouldMoveKey('auto', { ...body, contentEncoding: 'identity' })).toBe(true)
    expect(shouldMoveKey('auto', { ...body, queryCompression: true })).toBe(false)
    expect(shouldMoveKey('auto', { ...body, hasBearer: false })).toBe(false)
    expect(shouldMoveKey('auto', { ...body, contentLength: 0 })).toBe(false)
    expect(shouldMoveKey('auto', { ...body, contentLength: null })).toBe(false)
  })

  test('which bodies could carry the key at all, before their size is known (chunked)', () => {
    const body = { method: 'POST', contentEncoding: null, queryCompression: false, hasBearer: true }
    expect(canCarryKey('auto', body)).toBe(true)
    expect(canCarryKey('always', body)).toBe(true)
    expect(canCarryKey('never', body)).toBe(false)
    expect(canCarryKey('auto', { ...body, contentEncoding: 'gzip' })).toBe(false)
    expect(canCarryKey('auto', { ...body, queryCompression: true })).toBe(false)
    expect(canCarryKey('auto', { ...body, hasBearer: false })).toBe(false)
  })
})

describe('writing the key into the body', () => {
  test('first member of the object; every other byte kept', () => {
    expect(text(writeKeyIntoBody(bytes('{"a":1}'), 'k'))).toBe('{"apiKey":"k","a":1}')
    expect(text(writeKeyIntoBody(bytes('  {\n "n": 12345678901234567890 }'), 'k'))).toBe('{"apiKey":"k",\n "n": 12345678901234567890 }')
    expect(text(writeKeyIntoBody(bytes('{ }'), 'k'))).toBe('{"apiKey":"k" }')
    expect(text(writeKeyIntoBody(bytes('\ufeff{"a":"é"}'), 'k'))).toBe('{"apiKey":"k","a":"é"}')
  })

  test('left alone: a top-level apiKey (however spelled), arrays, scalars, invalid JSON with the word', () => {
    expect(writeKeyIntoBody(bytes('{"apiKey":"own"}'), 'k')).toBeNull()
    expect(writeKeyIntoBody(bytes('{"api\\u004bey":"own"}'), 'k')).toBeNull()
    expect(writeKeyIntoBody(bytes('[{"a":1}]'), 'k')).toBeNull()
    expect(writeKeyIntoBody(bytes('"x"'), 'k')).toBeNull()
    expect(writeKeyIntoBody(bytes('{"apiKey": broken'), 'k')).toBeNull()
  })

  test('a nested apiKey is not the top-level one', () => {
    expect(text(writeKeyIntoBody(bytes('{"props":{"apiKey":"x"}}'), 'k'))).toBe('{"apiKey":"k","props":{"apiKey":"x"}}')
  })

  test('the key is JSON-escaped', () => {
    expect(JSON.parse(text(writeKeyIntoBody(bytes('{}'), 'a"b\\c'))!)).toEqual({ apiKey: 'a"b\\c' })
  })
})

describe('paths', () => {
  test('only core public paths are forwarded', () => {
    for (const ok of ['/health', '/health/simple', '/api/ingestion/customEvent', '/api/ingestion/customEvent/batch', '/api/ingestion/session-end', '/api/ingestion/spans/batch']) {
      expect(isForwardedPath(ok)).toBe(true)
    }
    for (const no of ['/', '/health/', '/api/ingestion', '/api/ingestion/', '/api/ingestion//x', '/api/ingestion/../internal', '/api/ingestion/%2e%2e', '/api/ingestion/a.b', '/api/ingestion/a\\b', '/api/internal/scan-findings', '/api/projects', '//evil.test/health', '/http://evil.test']) {
      expect(isForwardedPath(no)).toBe(false)
    }
  })

  test('prefixes normalize to one form and refuse dots and odd characters', () => {
    expect(normalizePrefix('_sl')).toBe('/_sl')
    expect(normalizePrefix('/_sl/')).toBe('/_sl')
    expect(normalizePrefix('/a/b')).toBe('/a/b')
    expect(normalizePrefix('/')).toBe('')
    for (const bad of ['/a/../b', '/a//b', '/a b', '/a?b', '/%2e']) expect(() => normalizePrefix(bad)).toThrow()
  })

  test('under the prefix, by whole segments', () => {
    expect(underPrefix('/_sl/health', '/_sl')).toBe('/health')
    expect(underPrefix('/_sl', '/_sl')).toBe('/')
    expect(underPrefix('/_slx/health', '/_sl')).toBeNull()
    expect(underPrefix('/health', '/_sl')).toBeNull()
    expect(underPrefix('/health', '')).toBe('/health')
  })

  test('URLs split without a URL object', () => {
    expect(splitUrl('https://shop.test:8443/_sl/health?x=1#f')).toEqual({ proto: 'https', host: 'shop.test:8443', path: '/_sl/health', search: '?x=1' })
    expect(splitUrl('http://shop.test')).toEqual({ proto: 'http', host: 'shop.test', path: '/', search: '' })
    expect(splitUrl('http://shop.test?x=/a')).toEqual({ proto: 'http', host: 'shop.test', path: '/', search: '?x=/a' })
  })
})
