import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { gzipSync } from 'node:zlib'
import { loadConfig } from '@sightline/core/config'
import { coreWithBreakableDatabase, type BreakableCore } from '../../helpers/breakable-database'
import { startCore, type TestCore } from '../../helpers/core'

// The budget of request bodies held at once (core/src/http/body-budget.ts), through a listening core
// whose budget is 1 MB: big bodies may fill 896 KB of it, the last 128 KB is for small ones.
const BUDGET = 1024 * 1024
const BIG = 800 * 1024
const env = { MAX_BODY_MEMORY_BYTES: String(BUDGET) }

/** A custom-event batch of about `bytes` of JSON, valid for its route. */
function batchOf(bytes: number, sessionId: string): string {
  const count = 500
  const text = 'x'.repeat(Math.floor(bytes / count) - 40)
  return JSON.stringify({ sessionId, events: Array.from({ length: count }, (_, i) => ({ eventName: 'big', eventProperties: { i, text } })) })
}

interface Upload {
  /** What the server answered, as soon as it starts answering (its status line and fields). */
  answer: Promise<string>
  close(): void
}

/**
 * A POST that declares `declared` bytes of body and sends only `sent` of them, left hanging: a
 * client on a slow network, or one about to leave. The answer settles with the first bytes core
 * sends back (or '' when it closes without a word).
 */
function upload(base: string, path: string, headers: Record<string, string>, declared: number, sent: Uint8Array = new Uint8Array()): Upload {
  const { hostname, port } = new URL(base)
  const fields = Object.entries({ host: `${hostname}:${port}`, 'content-length': String(declared), 'content-type': 'application/json', ...headers })
  let socket: Socket | undefined
  let closed = false
  const answer = new Promise<string>((resolve, reject) => {
    void Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(opened) {
          socket = opened
          if (closed) return void opened.end()
          opened.write(`POST ${path} HTTP/1.1\r\n${fields.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`)
          if (sent.byteLength > 0) opened.write(sent)
        },
        data: (_socket, chunk) => resolve(Buffer.from(chunk).toString('latin1')),
        close: () => resolve(''),
        error: (_socket, error) => reject(error),
        connectError: (_socket, error) => reject(error),
      },
    })
  })
  return {
    answer,
    close() {
      closed = true
      socket?.end()
    },
  }
}

/** The answer, or 'no answer' when none came within `ms`: a request whose body core waits for. */
const within = (answer: Promise<string>, ms = 3000) => Promise.race([answer, Bun.sleep(ms).then(() => 'no answer')])

const statusOf = (head: string) => Number(head.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0)

describe('the body budget, through a listening core', () => {
  let core: TestCore
  let base: string
  let bearer: Record<string, string>
  beforeAll(async () => {
    core = await startCore({ env })
    base = await core.listen()
    bearer = { authorization: `Bearer ${core.key}` }
  })
  afterAll(() => core.close())

  const send = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...bearer, ...headers } })

  test('past the budget a request is answered 503 overloaded with Retry-After at once, its body unread; small ones are still served', async () => {
    // Charged by its Content-Length while its body is still on its way.
    const held = upload(base, '/api/ingestion/events', bearer, BIG, new TextEncoder().encode('{"sessionId":"held",'))
    await Bun.sleep(200)
    try {
      // Declares 600 KB and sends none of it: answered without waiting for it.
      const refused = upload(base, '/api/ingestion/customEvent/batch', bearer, 600 * 1024)
      const head = await within(refused.answer)
      refused.close()
      expect(statusOf(head)).toBe(503)
      expect(head).toMatch(/\r\nretry-after: 1\r\n/i)
      expect(head).toContain('"code":"overloaded"')

      // Chunked (no Content-Length): charged as its bytes arrive, and refused once they do not fit.
      const chunked = await send('/api/ingestion/customEvent/batch', new Blob([batchOf(600 * 1024, 'chunked')]).stream())
      expect(chunked.status).toBe(503)
      expect((await chunked.json()).error.code).toBe('overloaded')

      // Big bodies fill the budget up to the part kept for small ones (890 of 896 KB here)...
      const second = upload(base, '/api/ingestion/customEvent/batch', bearer, 90 * 1024, new Uint8Array(1024).fill(32))
      try {
        expect(await within(second.answer, 300)).toBe('no answer')
        // ...and a small body still fits in that part.
        const small = await send('/api/ingestion/customEvent', JSON.stringify({ sessionId: 'small', eventName: 'a', eventProperties: { text: 'x'.repeat(40 * 1024) } }))
        expect(small.status).toBe(200)
      } finally {
        second.close()
      }
    } finally {
      held.close()
    }
    // Its client gone, the held body's charge is given back: a big body is served again.
    await Bun.sleep(200)
    const after = await send('/api/ingestion/customEvent/batch', batchOf(BIG, 'after'))
    expect(after.status).toBe(200)
  })

  test('the budget is given back after answers, errors and aborted uploads: nothing leaks', async () => {
    // Each of these is charged (and alone, so admitted): 200, 400 invalid JSON, 400 validation, 413
    // inflated past the limit, a replay chunk read by its route's own reader, and uploads whose clients left.
    expect((await send('/api/ingestion/customEvent/batch', batchOf(BIG, 'ok'))).status).toBe(200)
    expect((await send('/api/ingestion/customEvent/batch', `${batchOf(BIG, 'broken')}}`)).status).toBe(400)
    expect((await send('/api/ingestion/customEvent/batch', batchOf(BIG, '').replace('"sessionId":""', '"sessionId":7'))).status).toBe(400)
    expect((await send('/api/ingestion/customEvent/batch', gzipSync('['.repeat(2 * 1024 * 1024)), { 'content-encoding': 'gzip' })).status).toBe(413)
    expect((await send('/api/ingestion/events', gzipSync(batchOf(BIG, 'replay')), { 'content-encoding': 'gzip' })).status).toBeLessThan(500)
    // One after another, on one connection and without a pause: each is given back by the time its
    // client has its answer.
    const answered: number[] = []
    for (const body of [batchOf(BIG, 'a'), `${batchOf(BIG, 'b')}}`, batchOf(BIG, '').replace('"sessionId":""', '"sessionId":7'), batchOf(BIG, 'c')]) {
      answered.push((await send('/api/ingestion/customEvent/batch', body)).status)
    }
    answered.push((await send('/api/ingestion/customEvent/batch', batchOf(BIG, 'd'), { authorization: 'Bearer sl_unknown' })).status)
    answered.push((await send('/api/ingestion/customEvent/batch', batchOf(BIG, 'e'))).status)
    expect(answered).toEqual([200, 400, 400, 200, 401, 200])
    // In-process (app.handle), the next request comes before the turn of the event loop after an
    // answer: a body answered or failing to parse is given back before that.
    const handled: number[] = []
    for (const body of [batchOf(BIG, 'f'), `${batchOf(BIG, 'g')}}`, batchOf(BIG, 'h'), batchOf(BIG, 'i')]) {
      handled.push((await core.post('/api/ingestion/customEvent/batch', body)).status)
    }
    expect(handled).toEqual([200, 400, 200, 200])
    for (let i = 0; i < 20; i++) {
      const left = upload(base, i % 2 ? '/api/ingestion/events' : '/api/ingestion/customEvent/batch', bearer, BIG, new Uint8Array(64 * 1024).fill(32))
      await Bun.sleep(30)
      left.close()
    }
    await Bun.sleep(200)

    // Were anything of those still charged, this upload would not fit beside it.
    const held = upload(base, '/api/ingestion/customEvent/batch', bearer, BIG, new Uint8Array(1024).fill(32))
    try {
      expect(await within(held.answer, 500)).toBe('no answer')
      // And the budget still holds: a second big body does not fit beside it.
      const refused = await send('/api/ingestion/customEvent/batch', batchOf(600 * 1024, 'refused'))
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
    } finally {
      held.close()
    }
    await Bun.sleep(200)
    expect((await send('/api/ingestion/customEvent/batch', batchOf(BIG, 'served'))).status).toBe(200)
  })
})

describe('the body budget while the database does not answer', () => {
  let broken: BreakableCore
  beforeAll(async () => {
    broken = await coreWithBreakableDatabase({ env })
  })
  afterAll(() => broken.close())

  test('bodies waiting for their commit hold the budget: the next big one is refused at once rather than held too', async () => {
    const { core } = broken
    // The key is known before the database stops answering.
    expect((await core.post('/api/ingestion/customEvent', { sessionId: 'warm', eventName: 'a' })).status).toBe(200)
    broken.freezeDatabase()
    const waiting = core.post('/api/ingestion/customEvent/batch', batchOf(BIG, 'waiting'))
    await Bun.sleep(200)
    const started = performance.now()
    const refused = await core.post('/api/ingestion/customEvent/batch', batchOf(600 * 1024, 'refused'))
    expect({ status: refused.status, code: (await refused.json()).error.code }).toEqual({ status: 503, code: 'overloaded' })
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(performance.now() - started).toBeLessThan(2000)
    broken.repair()
    void waiting.catch(() => {})
  })
})

test('MAX_BODY_MEMORY_BYTES is 256 MB unless set, and at least 1 MB', () => {
  expect(loadConfig({}).maxBodyMemoryBytes).toBe(256 * 1024 * 1024)
  expect(loadConfig({ MAX_BODY_MEMORY_BYTES: '1048576' }).maxBodyMemoryBytes).toBe(1048576)
  expect(() => loadConfig({ MAX_BODY_MEMORY_BYTES: '1000' })).toThrow('MAX_BODY_MEMORY_BYTES must be a whole number of bytes from 1048576 to 68719476736 (got "1000")')
})
