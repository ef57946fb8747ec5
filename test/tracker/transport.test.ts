import { afterEach, describe, expect, test } from 'bun:test'
import { BEACON_MAX_BYTES, REQUEST_TIMEOUT_MS, createTransport } from '@sightline/tracker/transport'
import { fakeClock } from './helpers/clock'
import { openPage, type Page } from './helpers/dom'
import { quietLog } from './helpers/quiet'
import { SERVICE_BASE, fakeService } from './helpers/service'

let page: Page
afterEach(() => page?.close())

function setup(options: { compression?: boolean } = {}) {
  page = openPage()
  const service = fakeService()
  service.catchBeacons(page.win)
  if (options.compression) (page.win as { CompressionStream?: unknown }).CompressionStream = CompressionStream
  const log = quietLog()
  const clock = fakeClock()
  const transport = createTransport({ base: SERVICE_BASE, apiKey: 'sl_dev_key', fetch: service.fetch, win: page.win, log, clock })
  return { service, transport, log, win: page.win, clock }
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

  test('gzip with CompressionStream for bodies over 1 KB (Content-Encoding), none for small ones', async () => {
    const { service, transport } = setup({ compression: true })
    await transport.send('/api/ingestion/events', { events: ['x'.repeat(5000)] })
    await transport.send('/api/ingestion/events', { events: ['small'] })
    expect(service.sent.map((r) => [r.compressed, r.headers['content-encoding'] as string | undefined])).toEqual([
      [true, 'gzip'],
      [false, undefined],
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

  test('sticky-beacon: fetch fails while the service is reachable, so this and every later send go by beacon', async () => {
    const { service, transport, log } = setup({ compression: true })
    // A blocker (or a proxy that drops preflights) fails the Authorization fetch; the no-cors probe passes.
    service.reply((request) => (request.headers.authorization ? 'network-error' : { status: 200 }))
    expect(transport.blocked).toBe(false)
    expect(await transport.send('/api/ingestion/customEvent/batch', { sessionId: 's', events: [1] })).toEqual({ status: 202 })
    expect(transport.blocked).toBe(true)
    await transport.send('/api/ingestion/events', { sessionId: 's', events: ['y'.repeat(3000)] })
    await service.beaconsRead()
    expect(service.sent.map((r) => [r.via, r.path, r.compressed, r.query])).toEqual([
      ['beacon', '/api/ingestion/customEvent/batch', false, ''],
      ['beacon', '/api/ingestion/events', true, '?compression=gzip'],
    ])
    expect(service.sent.every((r) => r.body.apiKey === 'sl_dev_key' && !r.headers.authorization)).toBe(true)
    expect(log.entries().map((e) => e.message)).toContain(`fetch to ${SERVICE_BASE} is blocked; sending by beacon from now on`)
  })

  test('not sticky when the service is unreachable (server down, offline network): a plain failure', async () => {
    const { service, transport } = setup()
    service.reply(() => 'network-error')
    expect(await transport.send('/api/ingestion/customEvent/batch', { events: [1] })).toEqual({ status: 0 })
    expect(transport.blocked).toBe(false)
    expect(service.sent).toEqual([])
  })

  test('a 5xx answer carries Retry-After; a body that is not JSON reads as no data', async () => {
    const { service, transport } = setup()
    service.reply(() => ({ status: 503, headers: { 'retry-after': '7' } }))
    expect(await transport.send('/api/ingestion/events', {})).toEqual({ status: 503, data: null, retryAfter: '7' })
  })

  test('ping (the heartbeat) is a CORS-simple fetch whose answer is read: text/plain, key in the body', async () => {
    const { service, transport } = setup()
    service.reply(() => ({ status: 200, body: { success: true, liveViewer: true } }))
    expect((await transport.ping('/api/ingestion/heartbeat', { sessionId: 's' })).data).toEqual({ success: true, liveViewer: true })
    const [request] = service.sent
    expect(request.via).toBe('fetch')
    expect(request.headers.authorization).toBeUndefined()
    expect(request.headers['content-type']).toBe('text/plain;charset=UTF-8')
    expect(request.body).toEqual({ sessionId: 's', apiKey: 'sl_dev_key' })
  })
})
