import { describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { startScripted } from './helpers'

// Answers whose Transfer-Encoding the socket client must not take at face value: codings it does not
// decode (the field is hop-by-hop and dropped, so the client would get coded bytes labelled plain),
// and chunked framing that is in doubt (with a Content-Length, or in HTTP/1.0), whose connection
// must not carry the next client's request.

/** An upstream that answers each request head with `answerFor(n)` (n counts requests from 0), recording the connection of each. */
const scripted = (answerFor: (n: number) => Uint8Array | string) => startScripted((n) => [answerFor(n)])

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'
const relayTo = (upstream: string) => createRelay({ upstream, prefix: '/_sl', client: socketClient(), timeoutMs: 2000 })
const get = (relay: ReturnType<typeof relayTo>) => relay(new Request('http://shop.test/_sl/health'))

const gzipped = gzipSync('{"status":"ok"}')
const chunk = (bytes: Uint8Array) => Buffer.concat([Buffer.from(`${bytes.byteLength.toString(16)}\r\n`), bytes, Buffer.from('\r\n')])

describe('socket client: a transfer coding other than chunked', () => {
  const cases: [string, Uint8Array][] = [
    ['gzip, chunked', Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'), chunk(gzipped), Buffer.from('0\r\n\r\n')])],
    ['gzip and chunked on two lines', Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n'), chunk(gzipped), Buffer.from('0\r\n\r\n')])],
    ['gzip, to the close', Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n'), gzipped])],
    ['chunked twice', Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n'), chunk(chunk(gzipped)), Buffer.from('0\r\n\r\n')])],
  ]
  for (const [name, answer] of cases) {
    test(`(${name}) is 502, never coded bytes passed on as plain; its connection is closed and the next request gets a fresh one`, async () => {
      const upstream = scripted((n) => (n === 0 ? answer : OK))
      try {
        const relay = relayTo(upstream.url)
        const refused = await get(relay)
        expect({ status: refused.status, code: ((await refused.json()) as { error: { code: string } }).error.code }).toEqual({ status: 502, code: 'upstream_unreachable' })
        expect(await (await get(relay)).text()).toBe('ok')
        expect(upstream.connections).toEqual([0, 1])
        await Bun.sleep(50)
        expect(upstream.open[0]).toBe(false)
      } finally {
        upstream.close()
      }
    })
  }
})

describe('fetch client: a transfer coding other than chunked', () => {
  const answer = Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'), chunk(gzipped), Buffer.from('0\r\n\r\n')])
  test('(gzip, chunked) is 502, never coded bytes passed on as plain; the next request is answered', async () => {
    const upstream = scripted((n) => (n === 0 ? answer : OK))
    try {
      const relay = createRelay({ upstream: upstream.url, prefix: '/_sl', client: fetchClient(), timeoutMs: 2000 })
      const refused = await get(relay)
      expect({ status: refused.status, code: ((await refused.json()) as { error: { code: string } }).error.code }).toEqual({ status: 502, code: 'upstream_unreachable' })
      expect(await (await get(relay)).text()).toBe('ok')
    } finally {
      upstream.close()
    }
  })
})

describe('socket client: chunked framing in doubt is passed on, and its connection never reused', () => {
  const cases: [string, string][] = [
    ['with a Content-Length too', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n'],
    ['in HTTP/1.0, kept alive', 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n'],
  ]
  for (const [name, answer] of cases) {
    test(`(${name}) the body is whole, without Content-Length; the next request goes out on a fresh connection`, async () => {
      const upstream = scripted((n) => (n === 0 ? answer : OK))
      try {
        const relay = relayTo(upstream.url)
        const first = await get(relay)
        expect({ status: first.status, length: first.headers.get('content-length'), text: await first.text() }).toEqual({ status: 200, length: null, text: 'hello world' })
        expect(await (await get(relay)).text()).toBe('ok')
        expect(upstream.connections).toEqual([0, 1])
      } finally {
        upstream.close()
      }
    })
  }
})
