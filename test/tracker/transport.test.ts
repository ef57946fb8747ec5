import { afterEach, describe, expect, test } from 'bun:test'
import { randomHex } from '@sightline/tracker/ids'
import { BEACON_MAX_BYTES, BLOCKED_AFTER_FAILURES, BLOCKED_RETRY_MS, GZIP_TIMEOUT_MS, PROBE_TIMEOUT_MS, REQUEST_TIMEOUT_MS, createTransport, type Transport } from '@sightline/tracker/transport'
import { later } from './helpers/connection'
import { fakeClock } from './helpers/clock'
import { openPage, type Page } from './helpers/dom'
import { quietLog } from './helpers/quiet'
import { SERVICE_BASE, fakeService, type Reply } from './helpers/service'

let page: Page
afterEach(() => page?.close())

function setup(options: { compression?: boolean } = {}) {
  page = openPage()
  const service = fakeService()
  service.catchBeacons(page.win)
  if (options.compression) (page.win as { CompressionStream?: unknown }).CompressionStream = CompressionStream
  const log = quietLog()
  const clock = fakeClock()
  const transport = createTransport(SERVICE_BASE, 'sl_dev_key', service.fetch, page.win, log, clock, later)
  return { service, transport, log, win: page.win, clock }
}

/** Fetch failing while the service answers: all but the last of the failures that make a block come back as failures. */
async function failuresBeforeBlocked(transport: Transport) {
  for (let i = 1; i < BLOCKED_AFTER_FAILURES; i++) expect(await transport.send('/api/ingestion/customEvent/batch', { events: [] })).toEqual({ status: 0 })
  expect(transport.blocked).toBe(false)
}

describe('transport', () => {
  test('normally: fetch, the key in Authorization, JSON', async () => {
    const { service, transport } = setup()
    const answer = await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [] })
    expect(answer).toEqual({ status: 200, data: { success: true }, retryAfter: null })
    const [request] = service.sent
    expect(request.via).toBe('fetch')
    expect(request.url).toBe(`${SERVICE_BASE}/api/ingestion/customEvent/batch`)
    expect(request.headers.authorization).toBe('Bearer sl_dev_key')
    expect(request.headers['content-type']).toBe('application/json')
    expect(request.body).toEqual({ sessionId: 's', events: [] })
  })

  test(`a request not answered within ${REQUEST_TIMEOUT_MS / 1000} s is given up: no status, timed out, and not taken for a block`, async () => {
    const { service, transport, clock } = setup()
    service.reply((request) => (request.path === '/health/simple' ? { status: 200 } : 'no-answer'))
    let answer: unknown
    void transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [] }).then((a) => (answer = a))
    await clock.advance(REQUEST_TIMEOUT_MS - 1)
    expect(answer).toBeUndefined()
    await clock.advance(1)
    expect(answer).toEqual({ status: 0, timedOut: true })
    expect([transport.blocked, transport.answering]).toEqual([false, false])
    expect(clock.pending()).toEqual([])
  })

  test('gzip with CompressionStream for bodies over 1 KB (said in the query, as simple requests must), none for small ones', async () => {
    const { service, transport } = setup({ compression: true })
    await transport.send('/api/ingestion/events', { events: ['x'.repeat(5000)] })
    await transport.send('/api/ingestion/events', { events: ['small'] })
    expect(service.sent.map((r) => [r.compressed, r.query, r.headers['content-encoding'] as string | undefined])).toEqual([
      [true, '?compression=gzip', undefined],
      [false, '', undefined],
    ])
    expect(service.sent[0].body).toEqual({ events: ['x'.repeat(5000)] })
  })

  test('on unload: sendBeacon, the key in a text/plain JSON body, synchronously', async () => {
    const { service, transport } = setup({ compression: true })
    let handedOver = false
    const beacon = page.win.navigator.sendBeacon.bind(page.win.navigator)
    page.win.navigator.sendBeacon = (url, data) => ((handedOver = true), beacon(url, data))
    const answer = transport.send('/api/ingestion/events', { sessionId: 's', events: ['x'.repeat(5000)] }, true)
    expect(handedOver).toBe(true)
    expect(await answer).toEqual({ status: 202 })
    await service.beaconsRead()
    const [request] = service.sent
    expect(request.via).toBe('beacon')
    expect(request.headers['content-type']).toBe('text/plain;charset=UTF-8')
    expect(request.headers.authorization).toBeUndefined()
    expect(request.compressed).toBe(false)
    expect(request.body).toEqual({ sessionId: 's', events: ['x'.repeat(5000)], apiKey: 'sl_dev_key' })
  })

  test('a beacon refused by the browser is status 0; one over the beacon limit is a local 413', async () => {
    const { transport, win } = setup()
    win.navigator.sendBeacon = () => false
    expect(await transport.send('/api/ingestion/events', { events: [] }, true)).toEqual({ status: 0 })
    expect(await transport.send('/api/ingestion/events', { events: ['x'.repeat(BEACON_MAX_BYTES)] }, true)).toEqual({ status: 413, local: true })
  })

  test('without sendBeacon: fetch with keepalive, text/plain, key in the body', async () => {
    const { service, transport, win } = setup()
    ;(win.navigator as { sendBeacon?: unknown }).sendBeacon = undefined
    expect(await transport.send('/api/ingestion/session-end', { sessionId: 's' }, true)).toEqual({ status: 202 })
    await Bun.sleep(5)
    const [request] = service.sent
    expect(request.via).toBe('keepalive')
    expect(request.headers.authorization).toBeUndefined()
    expect(request.headers['content-type']).toBe('text/plain;charset=UTF-8')
    expect(request.body).toEqual({ sessionId: 's', apiKey: 'sl_dev_key' })
  })

  test('sticky-beacon: fetch fails while the service is reachable, so this and every later send go by beacon, the key in the body', async () => {
    const { service, transport, log } = setup({ compression: true })
    // A proxy that drops preflights (or a CORS setup without Authorization) fails the Authorization
    // fetch; the no-cors probe passes.
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true, liveViewer: true } }))
    await failuresBeforeBlocked(transport)
    expect(await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [1] })).toEqual({ status: 202 })
    expect(transport.blocked).toBe(true)
    expect(await transport.send('/api/ingestion/events', { sessionId: 's', events: ['y'.repeat(3000)] })).toEqual({ status: 202 })
    await service.beaconsRead()
    // Small: a text/plain string; over 1 KB: gzipped bytes with no type, gzip said in the query.
    expect(service.sent.map((r) => [r.via, r.path, r.compressed, r.query, r.headers['content-type'] as string | undefined])).toEqual([
      ['beacon', '/api/ingestion/customEvent/batch', false, '', 'text/plain;charset=UTF-8'],
      ['beacon', '/api/ingestion/events', true, '?compression=gzip', undefined],
    ])
    expect(service.sent.map((r) => r.body)).toEqual([
      { sessionId: 's', events: [1], apiKey: 'sl_dev_key' },
      { sessionId: 's', events: ['y'.repeat(3000)], apiKey: 'sl_dev_key' },
    ])
    expect(log.entries().map((e) => e.message)).toContain(`fetch to ${SERVICE_BASE} is blocked; sending by beacon from now on`)
    // The heartbeat stays a simple fetch, its answer read: it needs no preflight.
    expect(await transport.post('/api/ingestion/heartbeat', { sessionId: 's' }, true)).toEqual({ status: 200, data: { success: true, liveViewer: true }, retryAfter: null })
    expect(service.sent.map((r) => r.via)).toEqual(['beacon', 'beacon', 'fetch'])
  })

  test('sticky-beacon without sendBeacon: fetch with keepalive, text/plain, the key in the body', async () => {
    const { service, transport, win } = setup()
    ;(win.navigator as { sendBeacon?: unknown }).sendBeacon = undefined
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
    await failuresBeforeBlocked(transport)
    expect(await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [1] })).toEqual({ status: 202 })
    await Bun.sleep(5)
    expect(service.sent.map((r) => [r.via, r.headers['content-type'], r.headers.authorization, r.body])).toEqual([
      ['keepalive', 'text/plain;charset=UTF-8', undefined, { sessionId: 's', events: [1], apiKey: 'sl_dev_key' }],
    ])
  })

  /** CompressionStream polyfills that fail: one whose constructor throws, one whose stream errors. */
  const BROKEN_COMPRESSION = {
    throwing: class {
      constructor() {
        throw new Error('gzip is not supported')
      }
    },
    erroring: class extends TransformStream {
      constructor() {
        super({ transform: (_chunk, controller) => controller.error(new Error('deflate failed')) })
      }
    },
  }
  for (const [kind, Compression] of Object.entries(BROKEN_COMPRESSION)) {
    test(`a CompressionStream polyfill that fails (${kind}): sent uncompressed, by fetch and by sticky beacon, nothing rejected`, async () => {
      const { service, transport, win, clock } = setup()
      service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
      await failuresBeforeBlocked(transport)
      ;(win as { CompressionStream?: unknown }).CompressionStream = Compression
      const body = { sessionId: 's', events: ['z'.repeat(3000)] }
      const send = () => transport.send('/api/ingestion/events', body).then((answer) => answer.status, String)
      const bySticky = [await send(), await send()]
      expect([bySticky, transport.blocked]).toEqual([[202, 202], true])
      // Fetch with the key again, once it works.
      service.reply(() => ({ status: 200, body: { success: true } }))
      await clock.advance(BLOCKED_RETRY_MS)
      expect(await send()).toBe(200)
      await service.beaconsRead()
      const stored = service.sent.filter((r) => r.body?.events?.length)
      expect(stored.map((r) => [r.via, r.compressed, r.query])).toEqual([
        ['beacon', false, ''],
        ['beacon', false, ''],
        ['fetch', false, ''],
      ])
      for (const request of stored) expect(request.body.events).toEqual(body.events)
    })
  }

  test('a CompressionStream that never settles (stalled by the browser or an extension): each body goes once, uncompressed, after GZIP_TIMEOUT_MS; the page does not wait on it again', async () => {
    const { service, transport, win } = setup()
    let streams = 0
    // Takes what it is given and never gives anything back, nor errors.
    ;(win as { CompressionStream?: unknown }).CompressionStream = class extends TransformStream {
      constructor() {
        super({ transform: () => new Promise(() => {}) })
        streams++
      }
    }
    const body = { sessionId: 's', events: ['z'.repeat(3000)] }
    const started = performance.now()
    const answer = await Promise.race([transport.send('/api/ingestion/events', body), Bun.sleep(GZIP_TIMEOUT_MS * 5).then(() => 'hung')])
    expect(answer).toEqual({ status: 200, data: { success: true }, retryAfter: null })
    expect(performance.now() - started).toBeGreaterThanOrEqual(GZIP_TIMEOUT_MS - 50)
    // The next send does not wait for it again.
    const next = performance.now()
    expect((await transport.send('/api/ingestion/events', body)).status).toBe(200)
    expect(performance.now() - next).toBeLessThan(GZIP_TIMEOUT_MS / 2)
    await Bun.sleep(50)
    expect(streams).toBe(1)
    expect(service.sent.map((r) => [r.via, r.compressed, r.query])).toEqual([
      ['fetch', false, ''],
      ['fetch', false, ''],
    ])
    for (const request of service.sent) expect(request.body).toEqual(body)
  })

  test("sticky-beacon: what a beacon cannot carry (a full snapshot of about 100 KB gzipped) goes as a CORS-simple fetch, and the service's answers count (413, 503 with Retry-After)", async () => {
    const { service, transport } = setup({ compression: true })
    let answer: Reply = { status: 200, body: { success: true } }
    service.reply((request) => (request.headers.authorization ? 'network-error' : request.path === '/health/simple' ? { status: 200 } : answer))
    await failuresBeforeBlocked(transport)
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toEqual({ status: 202 })
    expect(transport.blocked).toBe(true)
    // Text that hardly compresses: gzipped, it is still over what a beacon may carry.
    const snapshot = { sessionId: 's', events: [{ type: 2, timestamp: 1, data: randomHex(100_000) }] }
    expect(await transport.send('/api/ingestion/events', snapshot)).toEqual({ status: 200, data: { success: true }, retryAfter: null })
    answer = { status: 413 }
    expect(await transport.send('/api/ingestion/events', snapshot)).toEqual({ status: 413, data: null, retryAfter: null })
    answer = { status: 503, headers: { 'retry-after': '7' } }
    expect(await transport.send('/api/ingestion/events', snapshot)).toEqual({ status: 503, data: null, retryAfter: '7' })
    await service.beaconsRead()
    expect(service.sent.map((r) => [r.via, r.path, r.query])).toEqual([
      ['beacon', '/api/ingestion/customEvent/batch', ''],
      ...Array(3).fill(['fetch', '/api/ingestion/events', '?compression=gzip']),
    ])
    // CORS-simple: no header but the type (none for bytes), the key in the body.
    const sent = service.to('/events')
    expect(sent.every((r) => Object.keys(r.headers).length === 0)).toBe(true)
    expect(sent[0].body).toEqual({ ...snapshot, apiKey: 'sl_dev_key' })
  })

  test('sticky-beacon: a beacon the browser refuses (its quota for beacons in flight) goes as a CORS-simple fetch, its answer read', async () => {
    const { service, transport, win } = setup()
    let refusing = false
    const offered: string[] = []
    service.catchBeacons(win, (url) => (offered.push(new URL(url).pathname), !refusing))
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
    await failuresBeforeBlocked(transport)
    expect(await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [1] })).toEqual({ status: 202 })
    refusing = true
    expect(await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [2] })).toEqual({ status: 200, data: { success: true }, retryAfter: null })
    await service.beaconsRead()
    expect(offered).toEqual(['/api/ingestion/customEvent/batch', '/api/ingestion/customEvent/batch'])
    expect(service.sent.map((r) => [r.via, r.headers['content-type'], r.headers.authorization, r.body])).toEqual([
      ['beacon', 'text/plain;charset=UTF-8', undefined, { sessionId: 's', events: [1], apiKey: 'sl_dev_key' }],
      ['fetch', 'text/plain;charset=UTF-8', undefined, { sessionId: 's', events: [2], apiKey: 'sl_dev_key' }],
    ])
  })

  test(`fetch is taken for blocked after ${BLOCKED_AFTER_FAILURES} failures in a row, each while the service answered: a blip is not a block`, async () => {
    const { service, transport } = setup()
    /** How many of the next Authorization fetches fail. */
    let failing = 0
    service.reply((request) => (request.headers.authorization && failing-- > 0 ? 'network-error' : { status: 200, body: { success: true } }))
    const send = async () => (await transport.send('/api/ingestion/customEvent/batch', { events: [] })).status
    for (let round = 0; round < 3; round++) {
      failing = BLOCKED_AFTER_FAILURES - 1
      const statuses = []
      for (let i = 0; i < BLOCKED_AFTER_FAILURES; i++) statuses.push(await send())
      expect(statuses).toEqual([...Array(BLOCKED_AFTER_FAILURES - 1).fill(0), 200])
    }
    expect(transport.blocked).toBe(false)
    failing = BLOCKED_AFTER_FAILURES
    await failuresBeforeBlocked(transport)
    expect(await send()).toBe(202)
    expect(transport.blocked).toBe(true)
    await service.beaconsRead()
    expect(service.sent.map((r) => r.via)).toEqual(['fetch', 'fetch', 'fetch', 'beacon'])
  })

  test('sends under way together fail as one: a blip that fails a whole flush is one failure, and only failures in sequence make a block', async () => {
    const { service, transport } = setup()
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
    const send = () => transport.send('/api/ingestion/customEvent/batch', { events: [] })
    const together = BLOCKED_AFTER_FAILURES + 2
    expect(await Promise.all(Array.from({ length: together }, send))).toEqual(Array(together).fill({ status: 0 }))
    expect(transport.blocked).toBe(false)
    // Each started after the latest counted failure: two more make three in a row.
    expect(await send()).toEqual({ status: 0 })
    expect(transport.blocked).toBe(false)
    expect(await send()).toEqual({ status: 202 })
    expect(transport.blocked).toBe(true)
  })

  test("sticky-beacon: what the outbox kept goes as a CORS-simple fetch whose answer is read (a beacon's 202 would have it deleted unseen); new sends by beacon", async () => {
    const { service, transport } = setup()
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 503, headers: { 'retry-after': '7' } }))
    await failuresBeforeBlocked(transport)
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toEqual({ status: 202 })
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [2] }, false, true)).toEqual({ status: 503, data: null, retryAfter: '7' })
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [3] })).toEqual({ status: 202 })
    await service.beaconsRead()
    expect(service.sent.map((r) => [r.via, r.headers.authorization, r.body.events[0]])).toEqual([
      ['beacon', undefined, 1],
      ['fetch', undefined, 2],
      ['beacon', undefined, 3],
    ])
  })

  test(`once blocked, fetch with the key is tried again ${BLOCKED_RETRY_MS / 60_000} minutes on: kept when it works, blocked again at its first failure`, async () => {
    const { service, transport, clock, log } = setup()
    let blocking = true
    let tried = 0
    service.reply((request) => (request.headers.authorization && (tried++, blocking) ? 'network-error' : { status: 200, body: { success: true } }))
    const send = async () => (await transport.send('/api/ingestion/customEvent/batch', { events: [] })).status
    await failuresBeforeBlocked(transport)
    expect(await send()).toBe(202)
    expect([transport.blocked, tried]).toEqual([true, BLOCKED_AFTER_FAILURES])
    await clock.advance(BLOCKED_RETRY_MS - 1)
    expect(await send()).toBe(202)
    expect(tried).toBe(BLOCKED_AFTER_FAILURES)
    await clock.advance(1)
    expect(await send()).toBe(202)
    expect([transport.blocked, tried]).toEqual([true, BLOCKED_AFTER_FAILURES + 1])
    blocking = false
    await clock.advance(BLOCKED_RETRY_MS)
    expect(await send()).toBe(200)
    expect(transport.blocked).toBe(false)
    await service.beaconsRead()
    expect(service.sent.map((r) => r.via)).toEqual(['beacon', 'beacon', 'beacon', 'fetch'])
    expect(service.sent.at(-1)!.headers.authorization).toBe('Bearer sl_dev_key')
    expect(log.entries().filter((e) => e.message.includes('is blocked'))).toHaveLength(1)
  })

  test('not sticky when the service is unreachable (server down, offline network): a plain failure', async () => {
    const { service, transport } = setup()
    service.reply(() => 'network-error')
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toEqual({ status: 0 })
    expect(transport.blocked).toBe(false)
    expect(service.sent).toEqual([])
  })

  test("a gateway's 502 or 504 (the relay with core down or too slow) is no answer from the service; its own 503 is one", async () => {
    const { service, transport } = setup()
    for (const [status, code] of [[502, 'upstream_unreachable'], [504, 'upstream_timeout']] as const) {
      service.reply(() => ({ status, body: { success: false, error: { code, message: 'core did not answer' } }, headers: { 'retry-after': '1' } }))
      expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toMatchObject({ status, retryAfter: '1' })
      expect(transport.answering).toBe(false)
      service.reply(() => ({ status: 200, body: { success: true } }))
      expect((await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).status).toBe(200)
      expect(transport.answering).toBe(true)
    }
    service.reply(() => ({ status: 503, body: { success: false, error: { code: 'storage_unavailable', message: 'later' } } }))
    expect((await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).status).toBe(503)
    expect(transport.answering).toBe(true)
    expect(transport.blocked).toBe(false)
  })

  test('a probe answered 502 or 504 by the gateway is no answer either: failing fetches then are an outage, never a block', async () => {
    const { service, transport } = setup()
    for (const status of [502, 504]) {
      service.reply((request) => (request.path === '/health/simple' ? { status } : 'network-error'))
      for (let i = 0; i < BLOCKED_AFTER_FAILURES + 1; i++) expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toEqual({ status: 0 })
      expect(await transport.reachable()).toBe(false)
      expect(transport).toMatchObject({ answering: false, blocked: false })
    }
    // Nothing went by beacon (the fake keeps no request that failed).
    await service.beaconsRead()
    expect(service.sent).toEqual([])
    service.reply((request) => (request.path === '/health/simple' ? { status: 200 } : 'network-error'))
    expect(await transport.reachable()).toBe(true)
    expect(transport.answering).toBe(true)
  })

  test(`a probe not answered within ${PROBE_TIMEOUT_MS / 1000} s is given up: the service is taken for unreachable, and the send that asked returns`, async () => {
    const { service, transport, clock } = setup()
    service.reply((request) => (request.path === '/health/simple' ? 'no-answer' : 'network-error'))
    let answer: unknown
    void transport.send('/api/ingestion/customEvent/batch', { events: [1] }).then((a) => (answer = a))
    await clock.advance(PROBE_TIMEOUT_MS - 1)
    expect(answer).toBeUndefined()
    await clock.advance(1)
    expect(answer).toEqual({ status: 0 })
    expect(transport).toMatchObject({ answering: false, blocked: false })
    let reachable: unknown
    void transport.reachable().then((r) => (reachable = r))
    await clock.advance(PROBE_TIMEOUT_MS)
    expect(reachable).toBe(false)
    expect(clock.pending()).toEqual([])
  })

  test('a 5xx answer carries Retry-After; a body that is not JSON reads as no data', async () => {
    const { service, transport } = setup()
    service.reply(() => ({ status: 503, headers: { 'retry-after': '7' } }))
    expect(await transport.send('/api/ingestion/events', {})).toEqual({ status: 503, data: null, retryAfter: '7' })
  })

  test('a simple post (the heartbeat) is a CORS-simple fetch whose answer is read: text/plain, key in the body', async () => {
    const { service, transport } = setup()
    service.reply(() => ({ status: 200, body: { success: true, liveViewer: true } }))
    expect((await transport.post('/api/ingestion/heartbeat', { sessionId: 's' }, true)).data).toEqual({ success: true, liveViewer: true })
    const [request] = service.sent
    expect(request.via).toBe('fetch')
    expect(request.headers.authorization).toBeUndefined()
    expect(request.headers['content-type']).toBe('text/plain;charset=UTF-8')
    expect(request.body).toEqual({ sessionId: 's', apiKey: 'sl_dev_key' })
  })
})
