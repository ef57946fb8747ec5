import { describe, expect, test } from 'bun:test'
import { ChunkedDecoder, MAX_FIELDS, MAX_HEAD_BYTES, parseRequestHead, RequestError } from '@sightline/relay/standalone/request-parser'

/** latin1, so that "\xe9" in a test string is the single byte 0xe9 on the wire. */
const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'latin1'))
const parse = (raw: string) => parseRequestHead(bytes(raw))
const head = (raw: string) => {
  const result = parse(raw)
  if (!result) throw new Error('head not complete')
  return result.head
}
/** A GET with the fields given, in HTTP/1.1 with a Host unless the fields or version say otherwise. */
const request = (fields: string, version = 'HTTP/1.1') => `GET / ${version}\r\n${fields}\r\n\r\n`

function status(fn: () => unknown): number | 'ok' {
  try {
    fn()
    return 'ok'
  } catch (error) {
    if (error instanceof RequestError) return error.status
    throw error
  }
}
const refusal = (raw: string) => status(() => parse(raw))

describe('parseRequestHead', () => {
  test('a typical browser POST', () => {
    const raw =
      'POST /api/event?x=1 HTTP/1.1\r\n' +
      'Host: example.com\r\n' +
      'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n' +
      'Accept: */*\r\n' +
      'Accept-Language: en-US,en;q=0.5\r\n' +
      'Accept-Encoding: gzip, deflate, br, zstd\r\n' +
      'Content-Type: text/plain;charset=UTF-8\r\n' +
      'Content-Length: 11\r\n' +
      'Origin: https://example.com\r\n' +
      'Connection: keep-alive\r\n' +
      'Cookie: a=1; b=2\r\n' +
      'Sec-Fetch-Mode: no-cors\r\n' +
      '\r\n'
    const result = parse(raw + '{"e":"pv"}\n')!
    expect(result.bytes).toBe(raw.length)
    expect(result.head).toEqual({
      method: 'POST',
      target: '/api/event?x=1',
      http10: false,
      headers: [
        ['host', 'example.com'],
        ['user-agent', 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'],
        ['accept', '*/*'],
        ['accept-language', 'en-US,en;q=0.5'],
        ['accept-encoding', 'gzip, deflate, br, zstd'],
        ['content-type', 'text/plain;charset=UTF-8'],
        ['content-length', '11'],
        ['origin', 'https://example.com'],
        ['connection', 'keep-alive'],
        ['cookie', 'a=1; b=2'],
        ['sec-fetch-mode', 'no-cors'],
      ],
      host: 'example.com',
      contentLength: 11,
      chunked: false,
      keepAlive: true,
      expectContinue: false,
    })
  })

  test('null until the head ends, at every cut; then pipelined bytes are left after `bytes`', () => {
    const first = 'GET /a HTTP/1.1\r\nHost: h\r\nX-Long: ' + 'v'.repeat(50) + '\r\n\r\n'
    const second = 'GET /b HTTP/1.1\r\nHost: h\r\n\r\n'
    for (let cut = 0; cut < first.length; cut++) expect(parse(first.slice(0, cut))).toBeNull()
    const result = parse(first + second)!
    expect(result.bytes).toBe(first.length)
    expect(result.head.target).toBe('/a')
    const next = parseRequestHead(bytes(first + second).subarray(result.bytes))!
    expect(next.head.target).toBe('/b')
    expect(next.bytes).toBe(second.length)
  })

  test('empty lines before the request line are skipped and counted in `bytes` (RFC 9112 §2.2)', () => {
    const raw = '\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n'
    expect(parse(raw)!.bytes).toBe(raw.length)
    expect(parse('\r\n\r\n')).toBeNull()
    expect(parse('\r\n\r')).toBeNull()
    expect(refusal('\r\n'.repeat(MAX_HEAD_BYTES))).toBe(431)
  })

  test('a head of no fields, a Uint8Array that is no Buffer, and a view into a larger buffer', () => {
    const raw = 'GET / HTTP/1.0\r\n\r\n'
    expect(head(raw)).toMatchObject({ method: 'GET', target: '/', http10: true, headers: [], host: null, contentLength: null, keepAlive: false })
    const big = bytes('xxxx' + raw + 'yy')
    expect(parseRequestHead(big.subarray(4))!.bytes).toBe(raw.length)
  })

  test('lines end in CRLF only: bare LF and bare CR are refused', () => {
    expect(refusal('GET / HTTP/1.1\nHost: h\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\nX: a\nY: b\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\nX: a\rY: b\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\rHost: h\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\nX\r: a\r\n\r\n')).toBe(400)
    expect(refusal('GET /\r HTTP/1.1\r\nHost: h\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\nX: a\r\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\r\n\r\n')).toBe(400)
    expect(refusal('GET / HTTP/1.1\r\nHost: h\r\nX: a\n\r\n\r\n')).toBe(400)
    // LF-only heads never send CRLF CRLF: refused at once, not left waiting.
    expect(refusal('GET / HTTP/1.1\nHost: h\n\n')).toBe(400)
    expect(refusal('\nGET / HTTP/1.1\r\n')).toBe(400)
    expect(refusal('\r\n\nGET / HTTP/1.1\r\n')).toBe(400)
  })

  test('what cannot start a request is refused before the head ends', () => {
    expect(refusal('\x16\x03\x01\x02\x00\x01')).toBe(400)
    expect(refusal(' GET / HTTP/1.1\r\n')).toBe(400)
  })

  test('request line', () => {
    expect(head(request('Host: h', 'HTTP/1.1'))).toMatchObject({ method: 'GET', target: '/', http10: false })
    expect(head('get /x HTTP/1.1\r\nHost: h\r\n\r\n').method).toBe('get')
    expect(head("M-!#$%&'*+.^_`|~9 /x HTTP/1.1\r\nHost: h\r\n\r\n").method).toBe("M-!#$%&'*+.^_`|~9")
    expect(head('OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n').target).toBe('*')
    expect(head('CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n').target).toBe('h:443')
    expect(head('GET http://h/a?b=%20c#d HTTP/1.1\r\nHost: h\r\n\r\n').target).toBe('http://h/a?b=%20c#d')
    for (const line of [
      'GET  / HTTP/1.1',
      'GET /  HTTP/1.1',
      'GET / HTTP/1.1 ',
      ' GET / HTTP/1.1',
      'GET\t/ HTTP/1.1',
      'GET /\tHTTP/1.1',
      'GET /a b HTTP/1.1',
      'GET HTTP/1.1',
      'GET',
      'GET /',
      'GET / ',
      '/ HTTP/1.1',
      'G@T / HTTP/1.1',
      'GE(T / HTTP/1.1',
      'G\xe9T / HTTP/1.1',
      'GET /\x00 HTTP/1.1',
      'GET /\x01 HTTP/1.1',
      'GET /\x7f HTTP/1.1',
      'GET /\xe9 HTTP/1.1',
      'GET /\x80 HTTP/1.1',
      'GET / http/1.1',
      'GET / HTTP/1',
      'GET / HTTP/1.10',
      'GET / HTTP/11',
      'GET / HTTP/1.x',
      'GET / HTTPS/1.1',
      'GET / HTTP/1,1',
    ]) {
      expect([line, refusal(`${line}\r\nHost: h\r\n\r\n`)]).toEqual([line, 400])
    }
    for (const version of ['HTTP/1.2', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/3.0', 'HTTP/9.9']) {
      expect([version, refusal(request('Host: h', version))]).toEqual([version, 505])
    }
  })

  test('field lines: names lower-cased, OWS trimmed, HTAB and obs-text kept', () => {
    const h = head(request('Host: h\r\nX-A:\t  one \t\r\nx-b:two\r\nX-Empty:\r\nX-Latin: caf\xe9 \xff\r\nX-Tab: a\tb'))
    expect(h.headers).toEqual([
      ['host', 'h'],
      ['x-a', 'one'],
      ['x-b', 'two'],
      ['x-empty', ''],
      ['x-latin', 'caf\xe9 \xff'],
      ['x-tab', 'a\tb'],
    ])
  })

  test('a repeated field appears once at its first position, values joined with ", "', () => {
    const h = head(request('Accept: a\r\nHost: h\r\nX-Y: 1\r\naccept: b\r\nX-Z: 2\r\nACCEPT: c'))
    expect(h.headers).toEqual([
      ['accept', 'a, b, c'],
      ['host', 'h'],
      ['x-y', '1'],
      ['x-z', '2'],
    ])
  })

  test('malformed field lines are refused', () => {
    for (const line of [
      'X-A : b', // RFC 9112 §5.1
      'X-A\t: b',
      ': b',
      'X-A b',
      'X-A',
      ' X-A: b', // RFC 9112 §5.2, obs-fold
      '\tX-A: b',
      'X@A: b',
      'X\xe9: b',
      'X-A: b\x00c',
      'X-A: \x00',
      'X-A: b\x01',
      'X-A: b\x1bc',
      'X-A: b\x7f',
      'X-A: b\x0bc',
      'X-A: b\x0cc',
    ]) {
      expect([line, refusal(request(`Host: h\r\n${line}`))]).toEqual([line, 400])
    }
    expect(refusal(request('Host: h\r\nX-A: b\r\n folded'))).toBe(400)
  })

  test('Host (RFC 9112 §3.2)', () => {
    expect(head(request('Host: example.com:8080')).host).toBe('example.com:8080')
    expect(head(request('Host:')).host).toBe('')
    expect(refusal(request('X: y'))).toBe(400)
    expect(refusal(request('Host: a\r\nHost: a'))).toBe(400)
    expect(refusal(request('Host: a\r\nhost: b'))).toBe(400)
    expect(refusal(request('Host:\r\nHost:'))).toBe(400)
    expect(head(request('X: y', 'HTTP/1.0')).host).toBeNull()
    expect(refusal(request('Host: a\r\nHost: b', 'HTTP/1.0'))).toBe(400)
  })

  test('Content-Length (RFC 9110 §8.6)', () => {
    const length = (fields: string) => head(request(`Host: h\r\n${fields}`)).contentLength
    expect(length('X: y')).toBeNull()
    expect(length('Content-Length: 0')).toBe(0)
    expect(length('Content-Length: 42')).toBe(42)
    expect(length('Content-Length:  42 ')).toBe(42)
    expect(length('Content-Length: 0042')).toBe(42)
    expect(length('Content-Length: 5, 5')).toBe(5)
    expect(length('Content-Length: 5,5 , 05')).toBe(5)
    expect(length('Content-Length: 5\r\nContent-Length: 5')).toBe(5)
    expect(length('Content-Length: 9007199254740991')).toBe(Number.MAX_SAFE_INTEGER)
    for (const value of ['', ' ', '+5', '-5', '0x5', '1e3', '5.0', '5 5', '5,', ',5', '5, 6', 'five', '9007199254740992', '99999999999999999999999', '\xb5']) {
      expect([value, refusal(request(`Host: h\r\nContent-Length: ${value}`))]).toEqual([value, 400])
    }
    expect(refusal(request('Host: h\r\nContent-Length: 5\r\nContent-Length: 6'))).toBe(400)
    expect(refusal(request('Host: h\r\nContent-Length: 5\r\nContent-Length: 5, 6'))).toBe(400)
    expect(refusal(request('Host: h\r\nContent-Length: 5\r\nContent-Length:'))).toBe(400)
  })

  test('Transfer-Encoding (RFC 9112 §6.1)', () => {
    for (const value of ['chunked', 'Chunked', 'CHUNKED', ' chunked\t']) {
      expect(head(request(`Host: h\r\nTransfer-Encoding: ${value}`))).toMatchObject({ chunked: true, contentLength: null })
    }
    expect(head(request('Host: h')).chunked).toBe(false)
    for (const value of ['gzip, chunked', 'chunked, chunked', 'chunked,', 'identity', '', 'gzip', 'chunked;q=1', 'chunked gzip', 'xchunked']) {
      expect([value, refusal(request(`Host: h\r\nTransfer-Encoding: ${value}`))]).toEqual([value, 501])
    }
    // All lines count, joined as one list.
    expect(refusal(request('Host: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked'))).toBe(501)
    expect(refusal(request('Host: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked'))).toBe(501)
    expect(refusal(request('Host: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:'))).toBe(501)
    // With Content-Length, in either order, or in HTTP/1.0: 400.
    expect(refusal(request('Host: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5'))).toBe(400)
    expect(refusal(request('Host: h\r\nContent-Length: 0\r\nTransfer-Encoding: chunked'))).toBe(400)
    expect(refusal(request('Transfer-Encoding: chunked', 'HTTP/1.0'))).toBe(400)
    expect(refusal(request('Host: h\r\nTransfer-Encoding: gzip', 'HTTP/1.0'))).toBe(400)
  })

  test('Expect (RFC 9110 §10.1.1)', () => {
    expect(head(request('Host: h')).expectContinue).toBe(false)
    for (const value of ['100-continue', '100-Continue', ' 100-CONTINUE ']) {
      expect(head(request(`Host: h\r\nExpect: ${value}`)).expectContinue).toBe(true)
    }
    for (const value of ['200-ok', '', '100-continue, foo', '100-continuex']) {
      expect([value, refusal(request(`Host: h\r\nExpect: ${value}`))]).toEqual([value, 417])
    }
  })

  test('Connection decides keepAlive (RFC 9112 §9.3)', () => {
    const keep = (fields: string, version = 'HTTP/1.1') => head(request(`Host: h\r\n${fields}`, version)).keepAlive
    expect(keep('X: y')).toBe(true)
    expect(keep('Connection: keep-alive')).toBe(true)
    expect(keep('Connection: Upgrade')).toBe(true)
    expect(keep('Connection: close')).toBe(false)
    expect(keep('Connection: CLOSE')).toBe(false)
    expect(keep('Connection: TE, Close')).toBe(false)
    expect(keep('Connection: te\r\nConnection: close')).toBe(false)
    expect(keep('Connection: closed')).toBe(true)
    expect(keep('X: y', 'HTTP/1.0')).toBe(false)
    expect(keep('Connection: keep-alive', 'HTTP/1.0')).toBe(true)
    expect(keep('Connection: Foo ,Keep-Alive', 'HTTP/1.0')).toBe(true)
    expect(keep('Connection: keep-alive, close', 'HTTP/1.0')).toBe(false)
    expect(keep('Connection: foo', 'HTTP/1.0')).toBe(false)
  })

  test('431 past MAX_HEAD_BYTES, complete or not', () => {
    const start = 'GET / HTTP/1.1\r\nHost: h\r\nX: '
    const end = '\r\n\r\n'
    const exact = start + 'v'.repeat(MAX_HEAD_BYTES - start.length - end.length) + end
    expect(exact.length).toBe(MAX_HEAD_BYTES)
    expect(parse(exact)!.bytes).toBe(MAX_HEAD_BYTES)
    // The limit counts from the request line.
    expect(parse('\r\n\r\n' + exact)!.bytes).toBe(MAX_HEAD_BYTES + 4)
    const over = start + 'v'.repeat(MAX_HEAD_BYTES - start.length - end.length + 1) + end
    expect(refusal(over)).toBe(431)
    // Incomplete: no completion of MAX_HEAD_BYTES bytes without CRLF CRLF can fit.
    expect(parse(exact.slice(0, MAX_HEAD_BYTES - 1))).toBeNull()
    expect(refusal(start + 'v'.repeat(MAX_HEAD_BYTES - start.length))).toBe(431)
    expect(refusal(start + 'v'.repeat(4 * MAX_HEAD_BYTES))).toBe(431)
  })

  test('431 past MAX_FIELDS field lines', () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 'Host: h' : `X-${i}: ${i}`)).join('\r\n')
    expect(head(request(fields(MAX_FIELDS))).headers.length).toBe(MAX_FIELDS)
    expect(refusal(request(fields(MAX_FIELDS + 1)))).toBe(431)
    // Repeated lines count as lines, though they collapse into one field.
    expect(refusal(request('Host: h\r\n' + 'X: y\r\n'.repeat(MAX_FIELDS)))).toBe(431)
  })
})

describe('ChunkedDecoder', () => {
  /** Feeds `parts` and gathers the decoded text, whether it ended, and the bytes left after it (all of any push after the end). */
  function decode(parts: Uint8Array[], decoder = new ChunkedDecoder()) {
    const pieces: Uint8Array[] = []
    let done = false
    let rest: string | null = null
    for (const part of parts) {
      const result = decoder.push(part)
      pieces.push(...result.pieces)
      if (result.rest) rest = (rest ?? '') + Buffer.from(result.rest).toString('latin1')
      if (result.done) done = true
      else expect(result.rest).toBeNull()
      if (done) expect(result.done).toBe(true)
    }
    return { text: Buffer.concat(pieces).toString('latin1'), done, rest, pieces }
  }
  const whole = (raw: string) => decode([bytes(raw)])
  const refusalOf = (raw: string) => status(() => whole(raw))

  const BODY =
    '5\r\nhello\r\n' +
    '1;name=value\r\n,\r\n' +
    '0007 ; a ; b="q;\xe9" \t\r\n world!\r\n' +
    'a\r\n0123456789\r\n' +
    'A\r\nabcdefghij\r\n' +
    '1f\r\n' + 'x'.repeat(31) + '\r\n' +
    '000\r\n' +
    'Trailer-A: 1\r\n' +
    'trailer-b:\t2 \xff\r\n' +
    '\r\n'
  const DECODED = 'hello, world!0123456789abcdefghij' + 'x'.repeat(31)
  const NEXT = 'GET /next HTTP/1.1\r\nHost: h\r\n\r\n'

  test('decodes whole input, leaving the pipelined request in `rest`', () => {
    expect(whole(BODY)).toMatchObject({ text: DECODED, done: true, rest: null })
    expect(whole(BODY + NEXT)).toMatchObject({ text: DECODED, done: true, rest: NEXT })
    expect(whole('0\r\n\r\n')).toMatchObject({ text: '', done: true, rest: null })
    expect(whole('0\r\n\r\nX')).toMatchObject({ text: '', done: true, rest: 'X' })
  })

  test('the same output for the input split at every byte position, and byte by byte', () => {
    const input = bytes(BODY + NEXT)
    for (let cut = 0; cut <= input.length; cut++) {
      const result = decode([input.subarray(0, cut), input.subarray(cut)].filter((part) => part.length > 0))
      expect([cut, result.text, result.done, result.rest]).toEqual([cut, DECODED, true, NEXT])
    }
    const bodyOnly = bytes(BODY)
    for (let cut = 0; cut <= bodyOnly.length; cut++) {
      expect([cut, decode([bodyOnly.subarray(0, cut), bodyOnly.subarray(cut)].filter((part) => part.length > 0))]).toMatchObject([cut, { text: DECODED, done: true, rest: null }])
    }
    const single = Array.from(input, (byte) => Uint8Array.of(byte))
    expect(decode(single)).toMatchObject({ text: DECODED, done: true, rest: NEXT })
    // Three pieces, every pair of cuts, on a smaller body.
    const small = bytes('3;x\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\nZZ')
    for (let a = 0; a <= small.length; a++) {
      for (let b = a; b <= small.length; b++) {
        const result = decode([small.subarray(0, a), small.subarray(a, b), small.subarray(b)].filter((part) => part.length > 0))
        expect([a, b, result.text, result.done, result.rest]).toEqual([a, b, 'abcde', true, 'ZZ'])
      }
    }
  })

  test('pieces are views of the input, not copies', () => {
    const input = bytes('5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n')
    const { pieces } = decode([input])
    expect(pieces.map((piece) => Buffer.from(piece).toString())).toEqual(['hello', 'abc'])
    for (const piece of pieces) expect(piece.buffer).toBe(input.buffer)
    // Data split across pushes: each piece a view of its own push.
    const decoder = new ChunkedDecoder()
    const a = bytes('5\r\nhel')
    const b = bytes('lo\r\n0\r\n\r\n')
    expect(decoder.push(a).pieces[0].buffer).toBe(a.buffer)
    expect(decoder.push(b).pieces[0].buffer).toBe(b.buffer)
  })

  test('incomplete input is not done', () => {
    for (const raw of ['', '5', '5\r', '5\r\nhel', '5\r\nhello', '5\r\nhello\r', '0\r\n', '0\r\nT: v\r\n', '0\r\n\r']) {
      expect([raw, whole(raw).done]).toEqual([raw, false])
    }
  })

  test('chunk-size: 1*HEXDIG, at most 12 digits', () => {
    expect(whole('000000000005\r\nhello\r\n0\r\n\r\n').text).toBe('hello')
    expect(whole('fFfFfFfFfFfF\r\n').done).toBe(false)
    for (const line of ['', 'x', 'g', ' 5', '+5', '-5', '0x5', '5 ', '5\t', '5 x', '5x', '5,', '0000000000005', 'fffffffffffff', '1000000000000']) {
      expect([line, refusalOf(`${line}\r\nhello\r\n0\r\n\r\n`)]).toEqual([line, 400])
    }
  })

  test('chunk extensions: ignored, BWS before ";" tolerated, no controls, 4096 bytes at most', () => {
    expect(whole('5 \t;a=b;c="d e"\r\nhello\r\n0;last\r\n\r\n')).toMatchObject({ text: 'hello', done: true })
    expect(whole('5;\xe9\xff\r\nhello\r\n0\r\n\r\n').text).toBe('hello')
    expect(whole('5;a\tb\r\nhello\r\n0\r\n\r\n').text).toBe('hello')
    for (const ext of [';a\x00', ';a\x01b', ';a\x7f', ';a\rb', ';a\x1b']) {
      expect([ext, refusalOf(`5${ext}\r\nhello\r\n0\r\n\r\n`)]).toEqual([ext, 400])
    }
    // A bare LF ends no size line: refused, not taken as its end.
    expect(refusalOf('5\nhello\r\n0\r\n\r\n')).toBe(400)
    expect(refusalOf('5;a\nhello\r\n0\r\n\r\n')).toBe(400)
    const line = (length: number) => '5;' + 'e'.repeat(length - 2)
    expect(whole(`${line(4096)}\r\nhello\r\n0\r\n\r\n`).text).toBe('hello')
    expect(refusalOf(`${line(4097)}\r\nhello\r\n0\r\n\r\n`)).toBe(400)
    // Also before the line ends, and fed in small pieces.
    expect(refusalOf(line(5000))).toBe(400)
    const long = bytes(line(5000))
    expect(status(() => decode(Array.from({ length: 50 }, (_, i) => long.subarray(i * 100, i * 100 + 100))))).toBe(400)
    const ok = bytes(`${line(4096)}\r\nhello\r\n0\r\n\r\n`)
    expect(decode(Array.from(ok, (byte) => Uint8Array.of(byte))).text).toBe('hello')
  })

  test('exactly CRLF after the data', () => {
    for (const raw of ['5\r\nhelloX\r\n0\r\n\r\n', '5\r\nhello\n0\r\n\r\n', '5\r\nhello\r0\r\n\r\n', '5\r\nhello\r\r\n0\r\n\r\n', '5\r\nhello world\r\n0\r\n\r\n', '5\r\nhel\r\n0\r\n\r\n', '5\r\nhello0\r\n\r\n']) {
      expect([raw, refusalOf(raw)]).toEqual([raw, 400])
      const input = bytes(raw)
      expect([raw, status(() => decode(Array.from(input, (byte) => Uint8Array.of(byte))))]).toEqual([raw, 400])
    }
  })

  test('trailer fields: checked as field lines, discarded, MAX_HEAD_BYTES at most', () => {
    expect(whole('0\r\nA: 1\r\nB: 2\r\n\r\nNEXT')).toMatchObject({ text: '', done: true, rest: 'NEXT' })
    for (const line of ['A : 1', ' A: 1', '\tA: 1', ': 1', 'A', 'A@: 1', 'A: 1\x00', 'A: \x01', 'A: 1\r2', 'A: 1\x7f']) {
      expect([line, refusalOf(`0\r\n${line}\r\n\r\n`)]).toEqual([line, 400])
    }
    expect(refusalOf('0\r\nA: 1\nB: 2\r\n\r\n')).toBe(400)
    expect(refusalOf('0\r\n\n')).toBe(400)
    expect(refusalOf('0\r\nA: 1\r\n\n')).toBe(400)
    // A trailer section of MAX_HEAD_BYTES bytes (with its final CRLF) passes; one byte more does not.
    const field = (total: number) => 'A: ' + 'v'.repeat(total - 3 - 4)
    expect(field(MAX_HEAD_BYTES).length + 4).toBe(MAX_HEAD_BYTES)
    expect(whole(`0\r\n${field(MAX_HEAD_BYTES)}\r\n\r\n`).done).toBe(true)
    expect(refusalOf(`0\r\n${field(MAX_HEAD_BYTES + 1)}\r\n\r\n`)).toBe(400)
    // Many short lines add up; and an endless line is refused before it ends.
    expect(refusalOf('0\r\n' + 'A: 1\r\n'.repeat(MAX_HEAD_BYTES / 6 + 1) + '\r\n')).toBe(400)
    expect(refusalOf('0\r\nA: ' + 'v'.repeat(MAX_HEAD_BYTES))).toBe(400)
  })

  test('once done, further input is all `rest`', () => {
    const decoder = new ChunkedDecoder()
    expect(decoder.push(bytes('0\r\n\r\n')).done).toBe(true)
    const more = decoder.push(bytes('abc'))
    expect(more.done).toBe(true)
    expect(Buffer.from(more.rest!).toString()).toBe('abc')
  })
})
