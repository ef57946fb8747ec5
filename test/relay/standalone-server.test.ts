import { afterAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { serveStandalone } from '@sightline/relay/standalone/serve'
import { startEndlessUpstream, startRelay, startScripted, type RunningRelay } from './helpers'

// The standalone relay's own HTTP/1.1 server (relay/src/standalone/), spoken to byte for byte over
// raw TCP: pipelining, the strict head parser's refusals (nothing of a refused request may reach
// core), bodies read around, 100 Continue, HTTP/1.0, chunked bodies, the idle timeout, core's answer
// passed on or rebuilt, a client gone mid-answer, and a graceful stop.

// ---------------------------------------------------------------------------------------------
// A raw client: writes exactly the bytes given, keeps every byte received, and says when it closes.

interface RawClient {
  /** Writes all of `bytes` (waiting for the socket to drain when it takes only part). */
  write(bytes: string | Uint8Array): Promise<void>
  /** Everything received so far, latin1 (one char per byte). */
  readonly text: string
  readonly closed: boolean
  /** Waits until `check(text)` holds or the connection closes, at most `ms`; returns whether it holds. */
  until(check: (text: string) => boolean, ms?: number): Promise<boolean>
  /** Waits for the connection's close, at most `ms`; returns whether it closed. */
  closedWithin(ms: number): Promise<boolean>
  /** Closes the client's side (FIN). */
  end(): void
}

async function connect(url: string | URL): Promise<RawClient> {
  const { hostname, port } = new URL(url)
  let text = ''
  let closed = false
  let waiters: (() => void)[] = []
  let drains: (() => void)[] = []
  const wake = () => {
    const woken = waiters
    waiters = []
    for (const resolve of woken) resolve()
  }
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data(_socket, chunk) {
        text += Buffer.from(chunk).toString('latin1')
        wake()
      },
      drain() {
        const woken = drains
        drains = []
        for (const resolve of woken) resolve()
      },
      close() {
        closed = true
        wake()
        for (const resolve of drains.splice(0)) resolve()
      },
      error() {
        closed = true
        wake()
      },
    },
  })
  /** The next data or close, or `ms`, whichever comes first. */
  const event = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      waiters.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  const client: RawClient = {
    async write(bytes) {
      let rest = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes)
      while (rest.byteLength > 0 && !closed) {
        const written = socket.write(rest)
        rest = rest.subarray(Math.max(written, 0))
        if (rest.byteLength > 0) await new Promise<void>((resolve) => drains.push(resolve))
      }
    },
    get text() {
      return text
    },
    get closed() {
      return closed
    },
    async until(check, ms = 5000) {
      const deadline = performance.now() + ms
      while (!check(text) && !closed && performance.now() < deadline) await event(deadline - performance.now())
      return check(text)
    },
    async closedWithin(ms) {
      const deadline = performance.now() + ms
      while (!closed && performance.now() < deadline) await event(deadline - performance.now())
      return closed
    },
    end: () => socket.end(),
  }
  return client
}

/** Sends `bytes` on a new connection and returns what came back once the server closed it (or `ms` passed). */
async function exchange(url: string | URL, bytes: string | Uint8Array, ms = 5000): Promise<{ text: string; closed: boolean }> {
  const client = await connect(url)
  await client.write(bytes)
  const closed = await client.closedWithin(ms)
  if (!closed) client.end()
  return { text: client.text, closed }
}

// ---------------------------------------------------------------------------------------------
// Reading answers off a byte stream.

interface Answer {
  status: number
  /** The head as received, without its final CRLF CRLF. */
  head: string
  /** Field names lower-cased; a repeated field's values joined with ", ". */
  headers: Record<string, string | undefined>
  body: string
}

/** The answers in `text`, in order (interim 1xx included); a last one still incomplete is left out unless `closed` ends it. */
function parseAnswers(text: string, closed = false): Answer[] {
  const answers: Answer[] = []
  let at = 0
  while (at < text.length) {
    const end = text.indexOf('\r\n\r\n', at)
    if (end === -1) break
    const head = text.slice(at, end)
    const [statusLine, ...lines] = head.split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0)
    const headers: Record<string, string | undefined> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).toLowerCase()
      const value = line.slice(colon + 1).trim()
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value
    }
    let from = end + 4
    let body = ''
    if (status < 200 || status === 204 || status === 304) {
      // no body
    } else if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      const decoded = decodeChunked(text, from)
      if (!decoded) break
      body = decoded.body
      from = decoded.end
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      if (text.length - from < length) break
      body = text.slice(from, from + length)
      from += length
    } else {
      // Framed by the connection's close.
      if (!closed) break
      body = text.slice(from)
      from = text.length
    }
    answers.push({ status, head, headers, body })
    at = from
  }
  return answers
}

/** The chunked body starting at `from` (trailers skipped) and where it ends, or null while incomplete. */
function decodeChunked(text: string, from: number): { body: string; end: number } | null {
  let body = ''
  let at = from
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at)
    if (lineEnd === -1) return null
    const size = parseInt(text.slice(at, lineEnd).split(';')[0].trim(), 16)
    at = lineEnd + 2
    if (size === 0) {
      // Trailer fields, then an empty line.
      for (;;) {
        const trailerEnd = text.indexOf('\r\n', at)
        if (trailerEnd === -1) return null
        const empty = trailerEnd === at
        at = trailerEnd + 2
        if (empty) return { body, end: at }
      }
    }
    if (text.length < at + size + 2) return null
    body += text.slice(at, at + size)
    at += size + 2
  }
}

/** WIRE.md's error shape, and its code. */
function errorCode(body: string): string | null {
  try {
    const parsed = JSON.parse(body)
    const shaped = parsed.success === false && typeof parsed.error?.code === 'string' && typeof parsed.error?.message === 'string' && parsed.error.message.length > 0
    return shaped && Object.keys(parsed).length === 2 ? parsed.error.code : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------
// A fake core on raw TCP: reads each request whole (Content-Length or chunked body), records it,
// and answers `{"target":...}`. Counts every byte it is sent, to see that nothing of a refused
// request reached it, even a partial one.

interface Arrived {
  method: string
  target: string
  headers: Record<string, string>
  body: Buffer
}

type UpstreamAnswer = (arrived: Arrived) => string | Promise<string>

const jsonAnswer = (body: string) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
const echoTarget: UpstreamAnswer = (arrived) => jsonAnswer(JSON.stringify({ target: arrived.target }))

/** The request at the start of `buffer` and its length in bytes, or null while incomplete. */
function readRequest(buffer: Buffer): { arrived: Arrived; bytes: number } | null {
  const end = buffer.indexOf('\r\n\r\n')
  if (end === -1) return null
  const [line, ...lines] = buffer.toString('latin1', 0, end).split('\r\n')
  const [method, target] = line.split(' ')
  const headers: Record<string, string> = {}
  for (const field of lines) headers[field.slice(0, field.indexOf(':')).toLowerCase()] = field.slice(field.indexOf(':') + 1).trim()
  let at = end + 4
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const decoded = decodeChunked(buffer.toString('latin1'), at)
    if (!decoded) return null
    return { arrived: { method, target, headers, body: Buffer.from(decoded.body, 'latin1') }, bytes: decoded.end }
  }
  const length = Number(headers['content-length'] ?? 0)
  if (buffer.byteLength - at < length) return null
  const body = Buffer.from(buffer.subarray(at, at + length))
  at += length
  return { arrived: { method, target, headers, body }, bytes: at }
}

function startUpstream(answer: UpstreamAnswer = echoTarget) {
  const requests: Arrived[] = []
  const connections: { closed: boolean }[] = []
  let received = ''
  const listener = Bun.listen<{ index: number; buffer: Buffer; busy: boolean }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: connections.push({ closed: false }) - 1, buffer: Buffer.alloc(0), busy: false }
      },
      async data(socket, chunk) {
        received += Buffer.from(chunk).toString('latin1')
        const state = socket.data
        state.buffer = Buffer.concat([state.buffer, chunk])
        if (state.busy) return
        state.busy = true
        for (let next = readRequest(state.buffer); next; next = readRequest(state.buffer)) {
          state.buffer = state.buffer.subarray(next.bytes)
          requests.push(next.arrived)
          socket.write(await answer(next.arrived))
        }
        state.busy = false
      },
      close(socket) {
        connections[socket.data.index].closed = true
      },
    },
  })
  return {
    url: `http://127.0.0.1:${listener.port}`,
    requests,
    connections,
    /** Every byte sent to this upstream so far, latin1. */
    get received() {
      return received
    },
    close: () => listener.stop(true),
  }
}

/** Polls `check` every 10 ms until it holds or `ms` pass; returns whether it holds. */
async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const deadline = performance.now() + ms
  while (!check() && performance.now() < deadline) await Bun.sleep(10)
  return check()
}

// ---------------------------------------------------------------------------------------------

const upstream = startUpstream(async (arrived) => {
  // The first of a pipelined run is answered late: answers in order cannot be luck.
  if (arrived.target === '/health/simple') await Bun.sleep(50)
  return echoTarget(arrived)
})
const relay = await startRelay('standalone', { upstream: upstream.url, prefix: '/_sl' })
const small = await startRelay('standalone', { upstream: upstream.url, prefix: '/_sl', maxBodyBytes: 1000 })
const closers: (() => unknown)[] = [() => relay.close(), () => small.close(), () => upstream.close()]
afterAll(async () => {
  for (const close of closers) await close()
})

/** What reaches the upstream from now on: requests and bytes. */
function since() {
  const requests = upstream.requests.length
  const bytes = upstream.received.length
  return {
    requests: () => upstream.requests.slice(requests),
    bytes: () => upstream.received.slice(bytes),
  }
}

const HOST = 'Host: shop.test\r\n'

describe('standalone server: pipelining', () => {
  test('requests written in one write are answered in order on the one connection, and core sees the forwarded ones in order', async () => {
    const seen = since()
    const event = JSON.stringify({ sessionId: 's-pipe', eventName: 'pipelined' })
    const client = await connect(relay.url)
    await client.write(
      `GET /_sl/health/simple HTTP/1.1\r\n${HOST}\r\n` +
        `GET /_sl/nope HTTP/1.1\r\n${HOST}\r\n` +
        `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event}` +
        `GET /_sl/health HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`,
    )
    expect(await client.closedWithin(5000)).toBe(true)
    const answers = parseAnswers(client.text)
    expect(answers.map((a) => ({ status: a.status, body: a.status === 404 ? errorCode(a.body) : a.body }))).toEqual([
      { status: 200, body: '{"target":"/health/simple"}' },
      { status: 404, body: 'not_found' },
      { status: 200, body: '{"target":"/api/ingestion/customEvent"}' },
      { status: 200, body: '{"target":"/health"}' },
    ])
    // Nothing after the last answer, and only the last says the connection ends.
    expect(answers.map((a) => a.headers.connection ?? null)).toEqual([null, null, null, 'close'])
    expect(seen.requests().map((r) => `${r.method} ${r.target} ${r.body.toString('latin1')}`)).toEqual([
      'GET /health/simple ',
      `POST /api/ingestion/customEvent ${event}`,
      'GET /health ',
    ])
  })
})

describe('standalone server: smuggling refused before anything reaches core', () => {
  const SMUGGLED = `GET /_sl/api/ingestion/smuggled HTTP/1.1\r\n${HOST}\r\n`
  const REFUSALS: { name: string; bytes: string; status: number; code: string }[] = [
    {
      name: 'Content-Length with Transfer-Encoding',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Length: ${5 + SMUGGLED.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${SMUGGLED}`,
      status: 400,
      code: 'bad_request',
    },
    {
      name: 'Transfer-Encoding: gzip, chunked',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
      status: 501,
      code: 'unsupported_transfer_coding',
    },
    {
      name: 'two Transfer-Encoding lines (chunked, then identity)',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n`,
      status: 501,
      code: 'unsupported_transfer_coding',
    },
    {
      name: 'two differing Content-Length lines',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x`,
      status: 400,
      code: 'bad_request',
    },
    {
      name: 'a Content-Length list of differing values',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Length: 2, 3\r\n\r\n{}x`,
      status: 400,
      code: 'bad_request',
    },
    { name: 'an obs-fold line', bytes: `GET /_sl/health HTTP/1.1\r\n${HOST}X-Note: a\r\n folded\r\n\r\n`, status: 400, code: 'bad_request' },
    { name: 'bare LF line ends throughout', bytes: 'GET /_sl/health HTTP/1.1\nHost: shop.test\n\n', status: 400, code: 'bad_request' },
    { name: 'one bare LF inside a CRLF head', bytes: `GET /_sl/health HTTP/1.1\r\nHost: shop.test\nX-Hidden: 1\r\n\r\n`, status: 400, code: 'bad_request' },
    {
      name: 'whitespace between a field name and its colon',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Transfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n{}`,
      status: 400,
      code: 'bad_request',
    },
    { name: 'two Host fields', bytes: `GET /_sl/health HTTP/1.1\r\n${HOST}Host: evil.test\r\n\r\n`, status: 400, code: 'bad_request' },
    { name: 'HTTP/1.1 without Host', bytes: 'GET /_sl/health HTTP/1.1\r\n\r\n', status: 400, code: 'bad_request' },
    { name: 'a head over 16 KiB', bytes: `GET /_sl/health HTTP/1.1\r\n${HOST}X-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, status: 431, code: 'headers_too_large' },
    { name: 'an HTTP/2.0 request line', bytes: `GET /_sl/health HTTP/2.0\r\n${HOST}\r\n`, status: 505, code: 'http_version_not_supported' },
    {
      name: 'Expect: something-else',
      bytes: `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Expect: something-else\r\nContent-Length: 2\r\n\r\n{}`,
      status: 417,
      code: 'expectation_failed',
    },
  ]

  for (const { name, bytes, status, code } of REFUSALS) {
    test(`${name}: ${status} ${code} in the error shape, the connection closed, nothing sent to core`, async () => {
      const seen = since()
      const { text, closed } = await exchange(relay.url, bytes)
      const answers = parseAnswers(text)
      expect({ closed, count: answers.length }).toEqual({ closed: true, count: 1 })
      const [answer] = answers
      expect({ status: answer.status, code: errorCode(answer.body), type: answer.headers['content-type'], connection: answer.headers.connection }).toEqual({
        status,
        code,
        type: 'application/json',
        connection: 'close',
      })
      // Give a late forward every chance to show up: the relay's own answer is written first.
      await Bun.sleep(50)
      expect({ requests: seen.requests().length, bytes: seen.bytes() }).toEqual({ requests: 0, bytes: '' })
    })
  }

  test('a GET whose Content-Length body spells another request: core gets only the GET, the client one answer, then the close', async () => {
    const seen = since()
    const { text, closed } = await exchange(relay.url, `GET /_sl/health HTTP/1.1\r\n${HOST}Content-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`)
    const answers = parseAnswers(text)
    expect({ closed, answers: answers.map((a) => [a.status, a.body, a.headers.connection]) }).toEqual({ closed: true, answers: [[200, '{"target":"/health"}', 'close']] })
    // Nothing past the one answer.
    expect(text.endsWith('{"target":"/health"}')).toBe(true)
    await Bun.sleep(50)
    expect(seen.requests().map((r) => `${r.method} ${r.target} ${r.body.length}`)).toEqual(['GET /health 0'])
    expect(seen.bytes()).not.toContain('smuggled')
  })

  test('a body on a request the relay refuses at once (a HEAD whose absolute target has user info) is swallowed too, before and after the answer', async () => {
    const seen = since()
    const client = await connect(relay.url)
    // The refusal needs nothing from core and no body: answered before the body is taken.
    await client.write(`HEAD http://user@shop.test/_sl/health HTTP/1.1\r\n${HOST}Content-Length: ${SMUGGLED.length * 2}\r\n\r\n${SMUGGLED}`)
    expect(await client.until((text) => text.includes('\r\n\r\n'))).toBe(true)
    await client.write(SMUGGLED)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(client.text).toStartWith('HTTP/1.1 400 ')
    expect(client.text.toLowerCase()).toContain('connection: close')
    await Bun.sleep(50)
    expect({ requests: seen.requests().length, bytes: seen.bytes() }).toEqual({ requests: 0, bytes: '' })
  })

  test('a GET whose body comes after its head in a later write is swallowed too, never read as a request', async () => {
    const seen = since()
    const client = await connect(relay.url)
    await client.write(`GET /_sl/health HTTP/1.1\r\n${HOST}Content-Length: ${SMUGGLED.length}\r\n\r\n`)
    expect(await client.until((text) => parseAnswers(text).length === 1)).toBe(true)
    await client.write(SMUGGLED)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.headers.connection])).toEqual([[200, 'close']])
    await Bun.sleep(50)
    expect(seen.requests().map((r) => r.target)).toEqual(['/health'])
  })
})

describe('standalone server: Expect: 100-continue', () => {
  const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n'

  test('a small POST (the short way): 100 Continue before the body is sent, then the answer, and core gets the body', async () => {
    const seen = since()
    const event = JSON.stringify({ sessionId: 's-continue', eventName: 'continued' })
    const client = await connect(relay.url)
    await client.write(`POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${event.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
    expect(await client.until((text) => text.includes('\r\n\r\n'))).toBe(true)
    expect(client.text).toBe(CONTINUE)
    expect(seen.requests()).toEqual([])
    await client.write(event)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.body])).toEqual([
      [100, ''],
      [200, '{"target":"/api/ingestion/customEvent"}'],
    ])
    expect(seen.requests().map((r) => [r.target, r.body.toString('latin1')])).toEqual([['/api/ingestion/customEvent', event]])
  })

  test('a POST over 64 KiB (the Web path): 100 Continue before the body is sent, then the answer, and core gets the whole body', async () => {
    const seen = since()
    const body = JSON.stringify({ pad: 'p'.repeat(70_000) })
    const client = await connect(relay.url)
    await client.write(`POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
    expect(await client.until((text) => text.includes('\r\n\r\n'))).toBe(true)
    expect(client.text).toBe(CONTINUE)
    await client.write(body)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.body])).toEqual([
      [100, ''],
      [200, '{"target":"/api/ingestion/customEvent"}'],
    ])
    const [arrived] = seen.requests()
    expect({ count: seen.requests().length, length: arrived?.body.length, same: arrived?.body.toString('latin1') === body }).toEqual({ count: 1, length: body.length, same: true })
  })

  for (const declared of [5000, 100_000]) {
    const overHead = `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: ${declared}\r\nExpect: 100-continue\r\n\r\n`

    test(`a POST declaring ${declared} bytes, over maxBodyBytes (1000), body not sent: 413 payload_too_large and the close, nothing sent to core`, async () => {
      const seen = since()
      const client = await connect(small.url)
      await client.write(overHead)
      // The body is never sent: the answer and the close must come without it.
      expect(await client.closedWithin(5000)).toBe(true)
      const final = parseAnswers(client.text).filter((a) => a.status >= 200)
      expect(final.map((a) => [a.status, errorCode(a.body), a.headers.connection])).toEqual([[413, 'payload_too_large', 'close']])
      await Bun.sleep(50)
      expect({ requests: seen.requests().length, bytes: seen.bytes() }).toEqual({ requests: 0, bytes: '' })
    })

    // BUG (relay/src/standalone/web.ts, bodyStream): the body's ReadableStream has the default
    // highWaterMark of 1, so the stream calls pull() by itself right after start(), before the relay
    // reads anything: `100 Continue` goes out as soon as the Request is made, here before the 413, and
    // the client is told to send a body the relay then refuses unread.
    test(`a POST declaring ${declared} bytes, over maxBodyBytes (1000): the 413 comes without any 100 Continue before it`, async () => {
      const client = await connect(small.url)
      await client.write(overHead)
      expect(await client.closedWithin(5000)).toBe(true)
      expect(parseAnswers(client.text).map((a) => a.status)).toEqual([413])
      expect(client.text).not.toContain('100 Continue')
    })
  }
})

describe('standalone server: HTTP/1.0', () => {
  for (const [target, status, body] of [
    ['/_sl/health', 200, '{"target":"/health"}'],
    ['/_sl/nope', 404, null],
  ] as const) {
    test(`without keep-alive, ${target}: answered with a Content-Length, then the connection closes`, async () => {
      const { text, closed } = await exchange(relay.url, `GET ${target} HTTP/1.0\r\n${HOST}\r\n`)
      const answers = parseAnswers(text)
      expect({ closed, count: answers.length }).toEqual({ closed: true, count: 1 })
      const [answer] = answers
      expect({ status: answer.status, length: answer.headers['content-length'], connection: answer.headers.connection, chunked: answer.headers['transfer-encoding'] }).toEqual({
        status,
        length: String(Buffer.byteLength(answer.body)),
        connection: 'close',
        chunked: undefined,
      })
      if (body) expect(answer.body).toBe(body)
      else expect(errorCode(answer.body)).toBe('not_found')
    })
  }

  test('with Connection: keep-alive: the answer says keep-alive and a second request on the same socket is answered', async () => {
    const seen = since()
    const client = await connect(relay.url)
    await client.write(`GET /_sl/health HTTP/1.0\r\n${HOST}Connection: keep-alive\r\n\r\n`)
    expect(await client.until((text) => parseAnswers(text).length === 1)).toBe(true)
    const [first] = parseAnswers(client.text)
    expect({ status: first.status, connection: first.headers.connection, length: first.headers['content-length'], body: first.body }).toEqual({
      status: 200,
      connection: 'keep-alive',
      length: String(first.body.length),
      body: '{"target":"/health"}',
    })
    expect(client.closed).toBe(false)
    await client.write(`GET /_sl/health/simple HTTP/1.0\r\n${HOST}\r\n`)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.body, a.headers.connection])).toEqual([
      [200, '{"target":"/health"}', 'keep-alive'],
      [200, '{"target":"/health/simple"}', 'close'],
    ])
    expect(seen.requests().map((r) => r.target)).toEqual(['/health', '/health/simple'])
  })
})

/** `body` in the chunked coding, one chunk per size in `sizes` (cycled), with an extension and a trailer. */
function chunked(body: string, sizes: number[]): string {
  let out = ''
  for (let at = 0, i = 0; at < body.length; i++) {
    const size = Math.min(sizes[i % sizes.length], body.length - at)
    out += `${size.toString(16)}${i === 1 ? ';note=odd' : ''}\r\n${body.slice(at, at + size)}\r\n`
    at += size
  }
  return `${out}0\r\nX-Trailer: t\r\n\r\n`
}

/** `text` cut into pieces of the lengths in `lengths` (cycled). */
function cut(text: string, lengths: number[]): string[] {
  const pieces: string[] = []
  for (let at = 0, i = 0; at < text.length; i++) {
    pieces.push(text.slice(at, at + lengths[i % lengths.length]))
    at += lengths[i % lengths.length]
  }
  return pieces
}

describe('standalone server: chunked request bodies (the Web path)', () => {
  const head = `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`

  test('a small chunked body sent in odd pieces (each its own read) reaches core whole', async () => {
    const seen = since()
    const body = JSON.stringify({ sessionId: 's-chunked', eventName: 'in pieces', n: 1234567 })
    const client = await connect(relay.url)
    await client.write(head)
    // Pieces that split size lines, CRLFs and data alike; spaced so that each is a read of its own.
    for (const piece of cut(chunked(body, [1, 5, 10, 3]), [1, 2, 3, 5, 7])) {
      await client.write(piece)
      await Bun.sleep(5)
    }
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.body])).toEqual([[200, '{"target":"/api/ingestion/customEvent"}']])
    expect(seen.requests().map((r) => r.body.toString('latin1'))).toEqual([body])
  })

  test('a chunked body over 64 KiB (streamed to core) sent in odd pieces reaches core whole', async () => {
    const seen = since()
    const body = JSON.stringify({ pad: Array.from({ length: 100_000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('') })
    const client = await connect(relay.url)
    await client.write(head)
    for (const piece of cut(chunked(body, [1000, 7777, 13, 40_000]), [4093, 65_537, 10, 30_001])) await client.write(piece)
    expect(await client.closedWithin(5000)).toBe(true)
    expect(parseAnswers(client.text).map((a) => [a.status, a.body])).toEqual([[200, '{"target":"/api/ingestion/customEvent"}']])
    const arrived = seen.requests()
    expect({ count: arrived.length, length: arrived[0]?.body.length, same: arrived[0]?.body.toString('latin1') === body }).toEqual({ count: 1, length: body.length, same: true })
  })

  test('a malformed chunk size ends the connection, and no complete request reaches core', async () => {
    const seen = since()
    const { text, closed } = await exchange(relay.url, `${head}5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n`)
    expect(closed).toBe(true)
    // At most the relay's own refusal, never core's answer.
    for (const answer of parseAnswers(text)) expect(answer.status).toBeGreaterThanOrEqual(400)
    await Bun.sleep(50)
    expect(seen.requests()).toEqual([])
  })

  test('a malformed chunk size after 70 KB already streamed to core: the connection ends, and core never gets a complete request', async () => {
    const seen = since()
    const client = await connect(relay.url)
    await client.write(`${head}${(70_000).toString(16)}\r\n${'x'.repeat(70_000)}\r\n`)
    // Core has begun to receive the streamed body before the framing breaks.
    expect(await eventually(() => seen.bytes().length > 60_000)).toBe(true)
    await client.write('zz\r\nworld\r\n0\r\n\r\n')
    expect(await client.closedWithin(5000)).toBe(true)
    for (const answer of parseAnswers(client.text)) expect(answer.status).toBeGreaterThanOrEqual(400)
    await Bun.sleep(50)
    expect(seen.requests()).toEqual([])
  })

  // BUG (relay/src/index.ts, prepareBody's rejection handler, and gatewayError for a streamed body):
  // a body the Web path's chunked decoder refuses (web.ts errors its stream with RequestError(400))
  // is answered 499 client_closed_request "the client went away", to a client that is still there
  // and reads it; its framing is at fault, which is 400 bad_request like every other refusal.
  for (const [name, body] of [
    ['small', '5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n'],
    ['after 70 KB streamed to core', `${(70_000).toString(16)}\r\n${'x'.repeat(70_000)}\r\nzz\r\nworld\r\n0\r\n\r\n`],
  ]) {
    test(`a malformed chunk size (${name}) is answered 400 bad_request, not 499 client_closed_request`, async () => {
      const { text } = await exchange(relay.url, head + body)
      expect(parseAnswers(text).map((a) => [a.status, errorCode(a.body)])).toEqual([[400, 'bad_request']])
    })
  }
})

describe('standalone server: idle connections', () => {
  let idleRelay: RunningRelay
  test(
    'with timeoutMs 1000 (6 s idle), half a head and then silence: closed by the server, not before ~4 s and within 12 s',
    async () => {
      idleRelay = await startRelay('standalone', { upstream: upstream.url, prefix: '/_sl', timeoutMs: 1000 })
      closers.push(() => idleRelay.close())
      const seen = since()
      const client = await connect(idleRelay.url)
      await client.write('GET /_sl/health HTTP/1.1\r\nHost: sh')
      const started = performance.now()
      const closed = await client.closedWithin(12_000)
      const elapsed = performance.now() - started
      expect({ closed, early: elapsed < 4000, text: client.text }).toEqual({ closed: true, early: false, text: '' })
      expect(seen.requests()).toEqual([])
    },
    20_000,
  )

  test(
    'a connection in use is never idle: a request a second for 10 s (idle limit 6 s) is all answered on the one connection',
    async () => {
      const relay = await startRelay('standalone', { upstream: upstream.url, prefix: '/_sl', timeoutMs: 1000 })
      closers.push(() => relay.close())
      const client = await connect(relay.url)
      for (let second = 1; second <= 10; second++) {
        await client.write(`GET /_sl/health HTTP/1.1\r\n${HOST}\r\n`)
        expect(await client.until((text) => parseAnswers(text).length === second)).toBe(true)
        await Bun.sleep(1000)
      }
      expect({ closed: client.closed, answers: parseAnswers(client.text).map((a) => a.status) }).toEqual({ closed: false, answers: Array(10).fill(200) })
      client.end()
    },
    20_000,
  )
})

describe("standalone server: core's answer passed on", () => {
  const PASSABLE = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Core: 1\r\nContent-Length: 2\r\n\r\n{}'
  const WITH_DROPPED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: session=stolen; Path=/\r\nX-Core: 1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}'
  const scripted = startScripted((_index, head) => [head.startsWith('GET /health/simple ') ? WITH_DROPPED : PASSABLE])
  const through: Promise<RunningRelay> = startRelay('standalone', { upstream: scripted.url, prefix: '/_sl' })
  closers.push(() => scripted.close())
  closers.push(async () => (await through).close())

  test("an answer with nothing to leave out reaches the client byte for byte, field-name case kept", async () => {
    const client = await connect((await through).url)
    await client.write(`GET /_sl/health HTTP/1.1\r\n${HOST}\r\n`)
    expect(await client.until((text) => text.length >= PASSABLE.length)).toBe(true)
    expect(client.text).toBe(PASSABLE)
    client.end()
  })

  test('Set-Cookie and Connection: close are left out (head rebuilt), and the client connection stays open', async () => {
    const client = await connect((await through).url)
    await client.write(`GET /_sl/health/simple HTTP/1.1\r\n${HOST}\r\n`)
    expect(await client.until((text) => parseAnswers(text).length === 1)).toBe(true)
    const [answer] = parseAnswers(client.text)
    expect({ status: answer.status, headers: answer.headers, body: answer.body }).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-core': '1', 'content-length': '2' },
      body: '{}',
    })
    expect(client.text.toLowerCase()).not.toContain('stolen')
    // Core's Connection: close was about core's connection, not the client's.
    await client.write(`GET /_sl/health HTTP/1.1\r\n${HOST}\r\n`)
    expect(await client.until((text) => text.endsWith(PASSABLE))).toBe(true)
    expect(client.closed).toBe(false)
    client.end()
  })
})

describe('standalone server: a client gone in the middle of a streamed answer', () => {
  test("core's connection is closed by the relay", async () => {
    const endless = startEndlessUpstream()
    closers.push(() => endless.close())
    const streaming = await startRelay('standalone', { upstream: endless.url, prefix: '/_sl' })
    closers.push(() => streaming.close())
    const client = await connect(streaming.url)
    await client.write(`GET /_sl/health HTTP/1.1\r\n${HOST}\r\n`)
    // The head and a few chunks of the body have arrived.
    expect(await client.until((text) => text.length > 8 * 1024)).toBe(true)
    expect(client.text).toStartWith('HTTP/1.1 200 OK\r\n')
    expect(client.text.toLowerCase()).toContain('transfer-encoding: chunked\r\n')
    expect(endless.connections.map((c) => c.closed)).toEqual([false])
    client.end()
    expect(await eventually(() => endless.connections[0].closed, 3000)).toBe(true)
  })
})

describe('standalone server: graceful stop', () => {
  test('stop() lets the request waiting on a slow core finish, closes idle connections, refuses new ones, and settles afterwards', async () => {
    const ANSWER = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"status":"ok"}'
    let held: Socket<unknown> | null = null
    // /health is held until the test lets it go; /health/simple is answered at once.
    const slow = startScripted((_index, head, socket) => {
      if (head.startsWith('GET /health/simple ')) return [ANSWER]
      held = socket as Socket<unknown>
      return null
    })
    closers.push(() => slow.close())
    const server = serveStandalone({ upstream: slow.url, prefix: '/_sl', port: 0, hostname: '127.0.0.1' })
    closers.push(() => server.stop(true))

    // An idle connection the server knows of: one request answered, kept alive.
    const idle = await connect(server.url)
    await idle.write(`GET /_sl/health/simple HTTP/1.1\r\n${HOST}\r\n`)
    expect(await idle.until((text) => parseAnswers(text).length === 1)).toBe(true)

    const busy = await connect(server.url)
    await busy.write(`GET /_sl/health HTTP/1.1\r\n${HOST}\r\n`)
    expect(await eventually(() => held !== null)).toBe(true)

    let settled = false
    const stopping = server.stop().then(() => void (settled = true))
    expect(await idle.closedWithin(3000)).toBe(true)
    const refused = await Bun.connect({ hostname: '127.0.0.1', port: server.port, socket: { data() {} } }).then(
      (socket) => {
        socket.end()
        return 'connected'
      },
      () => 'refused',
    )
    expect(refused).toBe('refused')
    expect({ settled, busyClosed: busy.closed, busyText: busy.text }).toEqual({ settled: false, busyClosed: false, busyText: '' })

    held!.write(ANSWER)
    expect(await busy.closedWithin(5000)).toBe(true)
    expect(parseAnswers(busy.text).map((a) => [a.status, a.body, a.headers.connection])).toEqual([[200, '{"status":"ok"}', 'close']])
    await Promise.race([stopping, Bun.sleep(5000)])
    expect(settled).toBe(true)
  })
})
