import { describe, expect, test } from 'bun:test'
import { isDroppedResponseHeader } from '@sightline/relay/headers'
import { ResponseParser } from '@sightline/relay/upstream/parser'

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (parts: (Uint8Array | null)[]) => parts.map((p) => (p ? new TextDecoder().decode(p) : '')).join('')

/** Feeds an answer in pieces of `size` bytes and collects what the parser made of it. */
function parse(raw: string, size = raw.length, headRequest = false, parser = new ResponseParser()) {
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
      passable: true,
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

  test('an answer can go on as it came only when nothing of it is left out and a length frames it; its bytes are given when they came in one read', () => {
    const clean = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'
    const passable = (raw: string) => new ResponseParser(isDroppedResponseHeader).push(bytes(raw), false).head!.passable
    expect(passable(clean)).toBe(true)
    expect(passable('HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n')).toBe(true)
    for (const raw of [
      ANSWER, // Set-Cookie is left out
      'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}',
      'HTTP/1.1 200 OK\r\nConnection: x-trace\r\nX-Trace: 1\r\nContent-Length: 2\r\n\r\n{}',
      'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the close',
    ]) {
      expect({ raw, passable: passable(raw) }).toEqual({ raw, passable: false })
    }
    const whole = new ResponseParser(isDroppedResponseHeader).push(bytes(clean), false)
    expect(text([whole.received])).toBe(clean)
    // A head split over reads is joined: still this answer's bytes, and only them.
    const split = new ResponseParser()
    split.push(bytes(clean.slice(0, 10)), false)
    expect(text([split.push(bytes(clean.slice(10)), false).received])).toBe(clean)
    // Bytes after it are not part of it; after an interim answer, there are none to give (the 103 is not passed on).
    expect(text([new ResponseParser().push(bytes(`${clean}HTTP/1.1`), false).received])).toBe(clean)
    expect(new ResponseParser().push(bytes(`HTTP/1.1 103 Early Hints\r\n\r\n${clean}`), false).received).toBeNull()
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

  test('a field repeated on several lines counts whole: Connection options and close on any line', () => {
    const relayed = () => new ResponseParser(isDroppedResponseHeader)
    const named = parse('HTTP/1.1 200 OK\r\nConnection: x-hop\r\nConnection: keep-alive\r\nX-Hop: 1\r\nX-Kept: 1\r\nContent-Length: 0\r\n\r\n', undefined, false, relayed())
    expect(named.head?.headers).toEqual([['x-kept', '1'], ['content-length', '0']])
    expect(parse('HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, keepAlive: false })
    // Options are tokens: a field named x-closed is not "close".
    expect(parse('HTTP/1.1 200 OK\r\nConnection: x-closed\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, keepAlive: true })
  })

  test('Transfer-Encoding overrides Content-Length, which is not passed on, and the connection is not reused; a coding other than chunked throws', () => {
    const both = parse('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n')
    expect(both).toMatchObject({ done: true, keepAlive: false, text: 'hello world' })
    expect(both.head?.headers).toEqual([['transfer-encoding', 'chunked']])
    expect(parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n')).toMatchObject({ done: true, keepAlive: true, text: 'ok' })
    expect(() => parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nokmore')).toThrow('unsupported transfer coding')
    expect(() => parse('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n')).toThrow('unsupported transfer coding')
  })

  test('malformed answers throw', () => {
    for (const raw of [
      'HTTP/2 200\r\n\r\n',
      'HTTP/1.1 200 OK\r\nno colon\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      // RFC 9110 §8.6 and RFC 9112 §7.1: lengths are digits and chunk sizes hex digits, nothing a number parser would also take.
      'HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nok\r\n0\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2zz\r\nok\r\n0\r\n\r\n',
    ]) {
      expect(() => parse(raw)).toThrow()
    }
  })
})
