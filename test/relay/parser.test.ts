import { describe, expect, test } from 'bun:test'
import { ResponseParser } from '@sightline/relay/upstream/parser'

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (parts: (Uint8Array | null)[]) => parts.map((p) => (p ? new TextDecoder().decode(p) : '')).join('')

/** Feeds an answer in pieces of `size` bytes and collects what the parser made of it. */
function parse(raw: string, size = raw.length, headRequest = false) {
  const parser = new ResponseParser()
  const data = bytes(raw)
  const out = { head: null as ReturnType<ResponseParser['push']>['head'], body: [] as (Uint8Array | null)[], done: false, keepAlive: false }
  for (let i = 0; i < data.length && !out.done; i += size) {
    const result = parser.push(data.subarray(i, i + size), headRequest)
    if (result.head) out.head = result.head
    out.body.push(result.complete, ...result.body)
    if (result.done) Object.assign(out, { done: true, keepAlive: result.keepAlive })
  }
  return { ...out, text: text(out.body), parser }
}

describe('HTTP/1.1 response parser', () => {
  const ANSWER = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n{"success":true}'

  test('a whole answer in one piece: head, complete body, keep-alive', () => {
    const result = parse(ANSWER)
    expect(result.head).toEqual({
      status: 200,
      statusText: 'OK',
      hasBody: true,
      headers: [
        ['content-type', 'application/json'],
        ['content-length', '16'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ],
    })
    expect(result.text).toBe('{"success":true}')
    expect(result).toMatchObject({ done: true, keepAlive: true })
  })

  test('the same answer a byte at a time', () => {
    const result = parse(ANSWER, 1)
    expect(result.head?.status).toBe(200)
    expect(result.text).toBe('{"success":true}')
    expect(result.done).toBe(true)
  })

  test('chunked, with extensions and trailers, in odd pieces', () => {
    const raw = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'
    for (const size of [1, 3, 7, raw.length]) {
      const result = parse(raw, size)
      expect(result.text).toBe('hello world')
      expect(result).toMatchObject({ done: true, keepAlive: true })
    }
  })

  test('interim 1xx answers are skipped', () => {
    const result = parse('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok')
    expect(result.head?.status).toBe(201)
    expect(result.text).toBe('ok')
  })

  test('HEAD, 204 and 304 have no body whatever their Content-Length', () => {
    expect(parse('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n', undefined, true)).toMatchObject({ done: true, keepAlive: true, text: '' })
    expect(parse('HTTP/1.1 204 No Content\r\n\r\n')).toMatchObject({ done: true, text: '' })
    expect(parse('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n')).toMatchObject({ done: true, text: '' })
  })

  test('Connection: close, HTTP/1.0 and close-delimited bodies end the connection', () => {
    expect(parse('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, keepAlive: false })
    expect(parse('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, keepAlive: false })
    expect(parse('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, keepAlive: true })
    const open = parse('HTTP/1.1 200 OK\r\n\r\nuntil the end')
    expect(open).toMatchObject({ done: false, text: 'until the end' })
    expect(open.parser.endsAtClose()).toBe(true)
  })

  test('bytes past the answer make the connection unusable', () => {
    expect(parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA')).toMatchObject({ done: true, keepAlive: false, text: 'ok' })
  })

  test('malformed answers throw', () => {
    for (const raw of ['HTTP/2 200\r\n\r\n', 'HTTP/1.1 200 OK\r\nno colon\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n']) {
      expect(() => parse(raw)).toThrow()
    }
  })
})
