import { afterEach, describe, expect, test } from 'bun:test'
import { MAX_ATTEMPTS, RETRY_BASE_MS, RETRY_MAX_MS, createDelivery, retryAfterMs, retryDelay } from '@sightline/tracker/delivery'
import { createOutbox, webStorage } from '@sightline/tracker/storage'
import { BEACON_MAX_BYTES, REQUEST_TIMEOUT_MS, createTransport } from '@sightline/tracker/transport'
import { later } from './helpers/connection'
import { fakeClock, settle } from './helpers/clock'
import { openPage, storageOf, type Page } from './helpers/dom'
import { quietLog } from './helpers/quiet'
import { SERVICE_BASE, fakeService, type Reply, type Sent } from './helpers/service'

describe('retry timing (pure)', () => {
  test('exponential from 1 s, capped at a minute, half of it jitter', () => {
    expect(RETRY_BASE_MS).toBe(1000)
    expect([0, 1, 2, 3].map((attempt) => retryDelay(attempt, 1, null))).toEqual([1000, 2000, 4000, 8000])
    expect([0, 1, 2, 3].map((attempt) => retryDelay(attempt, 0, null))).toEqual([500, 1000, 2000, 4000])
    expect(retryDelay(10, 1, null)).toBe(RETRY_MAX_MS)
    expect(retryDelay(0, 0.5, null)).toBe(750)
  })

  test('Retry-After wins when it asks for longer: seconds or an HTTP date', () => {
    const now = Date.UTC(2025, 0, 1)
    expect(retryAfterMs('7', now)).toBe(7000)
    expect(retryAfterMs(new Date(now + 12_000).toUTCString(), now)).toBe(12_000)
    expect(retryAfterMs(new Date(now - 12_000).toUTCString(), now)).toBe(0)
    expect(retryAfterMs('soon', now)).toBeNull()
    expect(retryAfterMs(null, now)).toBeNull()
    expect(retryDelay(0, 1, 7000)).toBe(7000)
    expect(retryDelay(3, 1, 100)).toBe(8000)
  })

  test('a Retry-After of 0, negative, empty or missing asks for no wait', () => {
    const now = Date.UTC(2025, 0, 1)
    for (const header of ['0', '-5', '', '  ', undefined]) expect(retryAfterMs(header, now) || 0).toBe(0)
    expect(retryAfterMs(' 3 ', now)).toBe(3000)
    expect(retryDelay(2, 1, retryAfterMs('0', now))).toBe(4000)
  })
})

let page: Page
afterEach(() => page?.close())

function setup(reply?: (request: Sent) => Reply, alone?: (drain: () => Promise<void>) => Promise<unknown>) {
  page = openPage()
  const service = fakeService()
  service.catchBeacons(page.win)
  if (reply) service.reply(reply)
  const clock = fakeClock()
  const log = quietLog()
  const outbox = createOutbox(webStorage(() => page.win.localStorage), 'sl_outbox:k')
  const answers: Record<string, unknown>[] = []
  const stops: string[] = []
  const transport = createTransport(SERVICE_BASE, 'k', service.fetch, page.win, log, clock, later)
  const delivery = createDelivery(transport, outbox, clock, log, (data) => answers.push(data), (reason) => stops.push(reason), alone, () => 1)
  const parcel = (id: string, body: Record<string, unknown> = { sessionId: 's', events: [{ n: id }] }) => ({ id, path: '/api/ingestion/events', body })
  return { service, clock, outbox, delivery, answers, stops, parcel, log }
}

describe('delivery', () => {
  test('5xx and network errors retry with backoff; Retry-After is honoured', async () => {
    const replies: Reply[] = [{ status: 503, headers: { 'retry-after': '10' } }, 'network-error', { status: 500 }, { status: 200, body: { success: true } }]
    // Every request fails at the network level for a while: the reachability probe too (not "blocked").
    let n = 0
    const { service, clock, delivery, parcel } = setup((request) => (request.path === '/health/simple' ? 'network-error' : (replies[n++] ?? { status: 200 })))
    const attempts = () => service.sent.length + 0
    await delivery.deliver(parcel('a'))
    expect(clock.pending()).toEqual([10_000])
    await clock.advance(9_999)
    expect(clock.pending()).toEqual([1])
    await clock.advance(1)
    expect(clock.pending()).toEqual([2000])
    await clock.advance(2000)
    expect(clock.pending()).toEqual([4000])
    await clock.advance(4000)
    expect(clock.pending()).toEqual([])
    expect(attempts()).toBe(3)
    expect(service.sent.at(-1)!.body).toEqual({ sessionId: 's', events: [{ n: 'a' }] })
  })

  test('a Retry-After longer than the longest backoff: kept in the outbox, not in memory; the next send waits a minute, asks again, and once answered drains it', async () => {
    let down = true
    const { service, clock, delivery, outbox, parcel } = setup((request) => (down ? { status: 503, headers: { 'retry-after': '3600' } } : { status: 200, body: { success: true } }))
    await delivery.deliver(parcel('a'))
    expect(clock.pending()).toEqual([])
    expect(outbox.all()).toEqual([parcel('a')])
    down = false
    await delivery.deliver(parcel('b'))
    expect(clock.pending()).toEqual([RETRY_MAX_MS])
    await clock.advance(RETRY_MAX_MS - 1)
    expect(service.sent).toHaveLength(1)
    await clock.advance(1)
    expect(service.sent.map((r) => r.body.events[0].n)).toEqual(['a', 'b', 'a'])
    expect(outbox.size()).toBe(0)
  })

  test('Retry-After holds every send, not only the one it answered: what comes meanwhile waits, and a drain sends nothing', async () => {
    let down = true
    const { service, clock, delivery, outbox, parcel } = setup(() => (down ? { status: 503, headers: { 'retry-after': '10' } } : { status: 200, body: { success: true } }))
    outbox.put(parcel('kept'))
    await delivery.deliver(parcel('a'))
    await clock.advance(4000)
    await delivery.deliver(parcel('b'))
    await delivery.drain()
    expect(service.sent.map((r) => r.body.events[0].n)).toEqual(['a'])
    expect(clock.pending()).toEqual([6000, 6000])
    down = false
    await clock.advance(6000)
    expect(service.sent.map((r) => r.body.events[0].n).sort()).toEqual(['a', 'a', 'b', 'kept'])
    expect([outbox.size(), clock.pending()]).toEqual([0, []])
  })

  test('a request the service never answers is given up after the timeout and sent again; nothing piles up meanwhile', async () => {
    let answered = false
    const { service, clock, delivery, outbox, parcel } = setup((request) => (request.path === '/health/simple' ? { status: 200 } : answered ? { status: 200, body: { success: true } } : 'no-answer'))
    void delivery.deliver(parcel('a'))
    await clock.advance(REQUEST_TIMEOUT_MS)
    expect(clock.pending()).toEqual([RETRY_BASE_MS])
    answered = true
    await clock.advance(RETRY_BASE_MS)
    expect(service.sent.map((r) => [r.via, r.body.events[0].n])).toEqual([
      ['fetch', 'a'],
      ['fetch', 'a'],
    ])
    expect([clock.pending(), outbox.size()]).toEqual([[], 0])
  })

  test(`after ${MAX_ATTEMPTS} failed attempts the parcel is persisted, with its body unchanged`, async () => {
    const { clock, delivery, outbox, parcel } = setup(() => ({ status: 502 }))
    await delivery.deliver(parcel('a'))
    for (let i = 0; i < MAX_ATTEMPTS; i++) await clock.advance(RETRY_MAX_MS)
    expect(outbox.all()).toEqual([parcel('a')])
    expect(clock.pending()).toEqual([])
  })

  test('offline: persisted at once, nothing sent', async () => {
    const { service, delivery, outbox, parcel } = setup()
    Object.defineProperty(page.win.navigator, 'onLine', { value: false, configurable: true })
    await delivery.deliver(parcel('a'))
    expect(service.sent).toEqual([])
    expect(outbox.size()).toBe(1)
  })

  test('413: halved and each half resent; what cannot be halved is dropped and counted', async () => {
    const { service, delivery, parcel, outbox } = setup((request) => ({ status: request.body.events.length > 1 ? 413 : 200, body: { success: true } }))
    await delivery.deliver(parcel('a', { sessionId: 's', seq: 3, events: [1, 2, 3] }))
    expect(service.sent.map((r) => r.body.events).sort()).toEqual([[1], [1, 2], [1, 2, 3], [2], [3]])
    expect(service.sent.map((r) => r.body.seq)).toEqual([3, 3, 3, 3, 3])
    expect(outbox.size()).toBe(0)

    const tooBig = setup(() => ({ status: 413 }))
    await tooBig.delivery.deliver(tooBig.parcel('b'))
    expect(tooBig.delivery.drops()).toEqual({ too_large: 1 })
    expect(tooBig.outbox.size()).toBe(0)
  })

  test('other 4xx: dropped and counted by status, never retried', async () => {
    const { clock, delivery, parcel } = setup(() => ({ status: 400, body: { success: false, error: { code: 'validation_failed' } } }))
    await delivery.deliver(parcel('a'))
    expect(delivery.drops()).toEqual({ rejected_400: 1 })
    expect(clock.pending()).toEqual([])
  })

  test('400 naming an item of a batch (`/events/2/...`): halved until that item goes alone, and only it is dropped; a 400 naming none drops the parcel, not halved', async () => {
    const stored: unknown[] = []
    const { service, delivery, parcel, outbox } = setup((request) => {
      const bad = request.body.events.indexOf('bad')
      if (bad < 0) stored.push(...request.body.events)
      return bad < 0 ? { status: 200, body: { success: true } } : { status: 400, body: { success: false, error: { code: 'validation_failed' }, path: `/events/${bad}/eventName` } }
    })
    await delivery.deliver(parcel('a', { sessionId: 's', events: [1, 2, 'bad', 4, 5] }))
    expect(stored.sort()).toEqual([1, 2, 4, 5])
    expect(delivery.drops()).toEqual({ rejected_400: 1 })
    expect(outbox.size()).toBe(0)
    expect(service.sent).toHaveLength(5)

    const whole = setup(() => ({ status: 400, body: { success: false, error: { code: 'validation_failed' }, path: '/sessionId' } }))
    await whole.delivery.deliver(whole.parcel('b', { sessionId: 's', events: [1, 2, 3] }))
    expect(whole.service.sent).toHaveLength(1)
    expect(whole.delivery.drops()).toEqual({ rejected_400: 1 })
  })

  test('429 stops all sending, quietly: retries waiting are cancelled and later parcels are not sent', async () => {
    let limit = false
    const { service, clock, delivery, parcel, stops, log } = setup(() => (limit ? { status: 429, body: { success: false, monthlyLimitReached: true } } : { status: 503 }))
    await delivery.deliver(parcel('a'))
    expect(clock.pending()).toHaveLength(1)
    limit = true
    await delivery.deliver(parcel('b'))
    expect(stops).toEqual(['monthly_limit'])
    expect(clock.pending()).toEqual([])
    const before = service.sent.length
    await delivery.deliver(parcel('c'))
    expect(service.sent.length).toBe(before)
    expect(log.entries().filter((e) => e.level === 'error' || e.level === 'warn')).toEqual([])
  })

  test('429 while draining: the drain sends nothing more, and what is kept stays kept, for a page after the limit', async () => {
    const { service, delivery, outbox, parcel, stops } = setup(() => ({ status: 429, body: { success: false, monthlyLimitReached: true } }))
    for (const id of ['1', '2', '3']) outbox.put(parcel(id))
    await delivery.drain()
    expect([service.sent.length, stops, outbox.all().map((p) => p.id)]).toEqual([1, ['monthly_limit'], ['1', '2', '3']])
  })

  test('a success that says monthlyLimitReached is stored, then everything stops', async () => {
    const { delivery, parcel, stops, answers } = setup(() => ({ status: 200, body: { success: true, monthlyLimitReached: true } }))
    await delivery.deliver(parcel('a'))
    expect(answers).toEqual([{ success: true, monthlyLimitReached: true }])
    expect(stops).toEqual(['monthly_limit'])
    expect(delivery.halted).toBe('monthly_limit')
  })

  test('401: the key is refused, everything stops, with an error in the log', async () => {
    const { delivery, parcel, stops, log } = setup(() => ({ status: 401, body: { success: false, error: { code: 'invalid_api_key' } } }))
    await delivery.deliver(parcel('a'))
    expect(stops).toEqual(['invalid_key'])
    expect(log.entries().filter((e) => e.level === 'error').map((e) => e.message)).toEqual(['sending stopped: invalid_key'])
  })

  test('403 (a WAF or CDN refusing one request) is not a refused key: that parcel is dropped and counted, sending goes on', async () => {
    const { service, delivery, parcel, stops } = setup((request) => (request.body.events[0].n === 'a' ? { status: 403 } : { status: 200, body: { success: true } }))
    await delivery.deliver(parcel('a'))
    await delivery.deliver(parcel('b'))
    expect([delivery.halted, stops]).toEqual([null, []])
    expect(delivery.drops()).toEqual({ rejected_403: 1 })
    expect(service.sent.map((r) => r.body.events[0].n)).toEqual(['a', 'b'])
  })

  test('with fetch blocked, small parcels go by beacon and a full snapshot larger than a beacon may carry as a simple fetch: delivered, not kept for ever', async () => {
    const { service, clock, delivery, outbox, parcel } = setup((request) => (request.headers.authorization ? 'network-error' : { status: 200, body: { success: true } }))
    const snapshot = { sessionId: 's', seq: 0, events: [{ type: 2, timestamp: 1, data: 'x'.repeat(2 * BEACON_MAX_BYTES) }] }
    await delivery.deliver(parcel('small'))
    await clock.advance(RETRY_MAX_MS)
    await delivery.deliver(parcel('snapshot', snapshot))
    expect(outbox.size()).toBe(0)
    await service.beaconsRead()
    expect(service.to('/events').map((r) => [r.via, r.body.events[0].type ?? r.body.events[0].n, r.body.apiKey])).toEqual([
      ['beacon', 'small', 'k'],
      ['fetch', 2, 'k'],
    ])
  })

  test('with fetch blocked, what the outbox kept goes as a simple fetch whose answer is read: it leaves the outbox only once stored', async () => {
    let storing = false
    const { service, clock, delivery, outbox, parcel } = setup((request) => (request.headers.authorization ? 'network-error' : storing ? { status: 200, body: { success: true } } : { status: 503 }))
    await delivery.deliver(parcel('new'))
    await clock.advance(RETRY_MAX_MS)
    outbox.put(parcel('kept'))
    await delivery.drain()
    expect(outbox.all().map((p) => p.id)).toEqual(['kept'])
    storing = true
    await delivery.drain()
    expect(outbox.size()).toBe(0)
    await service.beaconsRead()
    expect(service.to('/events').map((r) => [r.via, r.body.events[0].n, r.headers.authorization])).toEqual([
      ['beacon', 'new', undefined],
      ['fetch', 'kept', undefined],
      ['fetch', 'kept', undefined],
    ])
  })

  test('unloading: in flight and waiting parcels are persisted; a later success removes its copy', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const { clock, delivery, outbox, parcel, service } = setup()
    service.reply(async (request) => (request.body.events[0].n === 'slow' ? (await gate, { status: 200, body: { success: true } }) : { status: 503 }))
    await delivery.deliver(parcel('waiting', { sessionId: 's', events: [{ n: 'waiting' }] }))
    const slow = delivery.deliver(parcel('slow', { sessionId: 's', events: [{ n: 'slow' }] }))
    await settle()
    delivery.persistPending()
    expect(outbox.all().map((p) => p.id).sort()).toEqual(['slow', 'waiting'])
    delivery.persistPending()
    expect(outbox.size()).toBe(2)
    release()
    await slow
    expect(outbox.all().map((p) => p.id)).toEqual(['waiting'])
    // The success drained the outbox: 'waiting' went once more (its last attempt) and stays kept.
    await settle()
    expect(outbox.all().map((p) => p.id)).toEqual(['waiting'])
    expect(clock.pending()).toEqual([])
  })

  test('draining keeps each parcel until it is stored: a page that dies meanwhile loses nothing', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const { delivery, outbox, parcel, service } = setup()
    service.reply(async () => (await gate, { status: 200, body: { success: true } }))
    outbox.put(parcel('a'))
    const draining = delivery.drain()
    await settle()
    expect(outbox.all().map((p) => p.id)).toEqual(['a'])
    // A second drain (online and pageshow together) does not send it twice.
    await delivery.drain()
    release()
    await draining
    expect(service.sent).toHaveLength(1)
    expect(outbox.size()).toBe(0)
  })

  test('200 parcels kept: a drain while offline writes nothing and sends nothing; one the service does not take stops at the first, writing nothing; back up, each leaves the outbox once stored, by itself', async () => {
    let down = true
    const { service, delivery, outbox, parcel } = setup(() => (down ? { status: 503 } : { status: 200, body: { success: true } }))
    for (let i = 0; i < 200; i++) outbox.put(parcel(String(i).padStart(3, '0')))
    const kept = storageOf(page.win).localStorage
    const writes = { set: 0, removed: [] as string[] }
    const storage = page.win.localStorage
    const [setItem, removeItem] = [storage.setItem.bind(storage), storage.removeItem.bind(storage)]
    Object.defineProperty(storage, 'setItem', { value: (key: string, value: string) => (writes.set++, setItem(key, value)) })
    Object.defineProperty(storage, 'removeItem', { value: (key: string) => (writes.removed.push(key), removeItem(key)) })

    Object.defineProperty(page.win.navigator, 'onLine', { value: false, configurable: true })
    await delivery.drain()
    expect([service.sent.length, writes]).toEqual([0, { set: 0, removed: [] }])

    Object.defineProperty(page.win.navigator, 'onLine', { value: true, configurable: true })
    await delivery.drain()
    expect([service.sent.length, writes]).toEqual([1, { set: 0, removed: [] }])
    expect(storageOf(page.win).localStorage).toEqual(kept)

    // Back up: each one leaves the outbox once it is stored, not before, and nothing else is written:
    // no list of what is kept is rewritten for each.
    down = false
    await delivery.drain()
    expect([service.sent.length, outbox.size(), writes.set]).toEqual([201, 0, 0])
    expect(writes.removed).toEqual(Object.keys(kept).sort())
  })

  test('a page hidden while draining keeps only what was not stored yet', async () => {
    let answered = 0
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const { service, delivery, outbox, parcel } = setup()
    service.reply(async () => (++answered === 26 ? (await held, { status: 200, body: { success: true } }) : { status: 200, body: { success: true } }))
    for (let i = 0; i < 50; i++) outbox.put(parcel(String(i).padStart(2, '0')))
    const draining = delivery.drain()
    while (answered < 26) await settle()
    // Stored so far: 25, gone from the outbox; one in flight.
    expect(outbox.size()).toBe(25)
    delivery.persistPending()
    expect(outbox.all().map((p) => Number(p.id))).toEqual(Array.from({ length: 25 }, (_, i) => 25 + i))
    release()
    await draining
  })

  test('a drained parcel answered 413 is replaced in the outbox by its halves, put before it goes: a page that dies meanwhile loses nothing, and a half that fails stays there', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const { service, clock, delivery, outbox, parcel } = setup()
    service.reply(async (request) =>
      request.body.events.length > 1 ? { status: 413 } : request.body.events[0] === 3 ? { status: 503 } : (await gate, { status: 200, body: { success: true } }),
    )
    outbox.put(parcel('a', { sessionId: 's', events: [1, 2, 3] }))
    outbox.put(parcel('b'))
    const draining = delivery.drain()
    await settle()
    expect(outbox.all().map((p) => [p.id, p.body.events])).toEqual([
      ['a.0.0', [1]],
      ['a.0.1', [2]],
      ['a.1', [3]],
      ['b', [{ n: 'b' }]],
    ])
    release()
    await draining
    expect(outbox.all().map((p) => p.id)).toEqual(['a.1'])
    expect(clock.pending()).toEqual([])
  })

  test('a drain stops at the first parcel the service did not take (no answer, 502 to 504, Retry-After): the rest stay, unsent, in order; a 500 is that parcel\'s own, and the drain goes on', async () => {
    for (const failure of ['network-error', { status: 502 }, { status: 503, headers: { 'retry-after': '1' } }, { status: 504 }] as Reply[]) {
      const tried: string[] = []
      const { delivery, outbox, parcel } = setup((request) => (request.path === '/health/simple' ? 'network-error' : (tried.push(request.body.events[0].n), failure)))
      for (const id of ['1', '2', '3']) outbox.put(parcel(id))
      await delivery.drain()
      expect([tried, outbox.all().map((p) => p.id)]).toEqual([['1'], ['1', '2', '3']])
      await page.close()
    }
    const { service, delivery, outbox, parcel } = setup((request) => (request.body.events[0].n === '1' ? { status: 500 } : { status: 200, body: { success: true } }))
    for (const id of ['1', '2', '3']) outbox.put(parcel(id))
    await delivery.drain()
    expect([service.sent.length, outbox.all().map((p) => p.id)]).toEqual([3, ['1']])
  })

  test('a kept parcel refused for its own sake (500, 408) is not sent again by this page, whose every success drains (every 150 ms with a live viewer); it stays kept, and the next page tries it once', async () => {
    for (const status of [500, 408]) {
      const own = (request: Sent) => request.body.events[0].n === 'bad'
      const { service, delivery, outbox, parcel, clock, log } = setup((request) => (own(request) ? { status } : { status: 200, body: { success: true } }))
      outbox.put(parcel('bad'))
      await delivery.drain()
      for (let i = 0; i < 20; i++) await delivery.deliver(parcel('new' + i))
      await settle()
      expect([service.sent.filter(own).length, service.sent.length, outbox.all().map((p) => p.id)]).toEqual([1, 21, ['bad']])

      // The next page load.
      const next = createDelivery(createTransport(SERVICE_BASE, 'k', service.fetch, page.win, log, clock, later), outbox, clock, log, () => {}, () => {})
      await next.drain()
      await next.drain()
      expect([service.sent.filter(own).length, outbox.all().map((p) => p.id)]).toEqual([2, ['bad']])
      await page.close()
    }
  })

  test('a kept parcel the service never takes (no answer, 502 to 504) while it takes others holds drains no longer: the first drain after a success goes past it; it stays kept, and the next page tries it first', async () => {
    for (const failure of ['no-answer', { status: 502 }, { status: 503 }, { status: 504 }] as Reply[]) {
      const sent: string[] = []
      const { service, delivery, outbox, parcel, clock, log } = setup((request) => {
        if (request.path === '/health/simple') return { status: 200 }
        sent.push(request.body.events[0].n)
        return request.body.events[0].n === 'bad' ? failure : { status: 200, body: { success: true } }
      })
      outbox.put(parcel('0', { sessionId: 's', events: [{ n: 'bad' }] }))
      for (const id of ['1', '2']) outbox.put(parcel(id))
      const given = async (sending: Promise<unknown>) => {
        await clock.advance(REQUEST_TIMEOUT_MS)
        await sending
        await settle()
      }
      // Nothing taken since it stopped a drain: the next one stops there again (the service may be down).
      await given(delivery.drain())
      await given(delivery.drain())
      expect([sent, outbox.all().map((p) => p.id)]).toEqual([['bad', 'bad'], ['0', '1', '2']])

      // The service takes another parcel: it answers, and the one that stops drains fails by itself.
      await given(delivery.deliver(parcel('new')))
      expect([sent, outbox.all().map((p) => p.id)]).toEqual([['bad', 'bad', 'new', 'bad', '1', '2'], ['0']])
      await given(delivery.deliver(parcel('more')))
      expect(sent.filter((n) => n === 'bad')).toHaveLength(3)

      // The next page load tries it again, first.
      const next = createDelivery(createTransport(SERVICE_BASE, 'k', service.fetch, page.win, log, clock, later), outbox, clock, log, () => {}, () => {})
      await given(next.drain())
      expect([sent.filter((n) => n === 'bad'), outbox.all().map((p) => p.id)]).toEqual([['bad', 'bad', 'bad', 'bad'], ['0']])
      await page.close()
    }
  })

  test('a drain runs alone: where another tab of the origin holds the drain, this one sends nothing and keeps everything', async () => {
    let held = true
    const { service, delivery, outbox, parcel } = setup(undefined, (drain) => (held ? Promise.resolve(null) : drain()))
    outbox.put(parcel('a'))
    await delivery.drain()
    expect([service.sent.length, outbox.size()]).toEqual([0, 1])
    held = false
    await delivery.drain()
    expect([service.sent.length, outbox.size()]).toEqual([1, 0])
  })

  test('a drain asks for the outbox (the Web Lock) only with something kept: an empty one asks nothing', async () => {
    let asked = 0
    const { service, delivery, outbox, parcel } = setup(undefined, (drain) => (asked++, drain()))
    await delivery.drain()
    expect(asked).toBe(0)
    outbox.put(parcel('a'))
    await delivery.drain()
    expect([asked, service.sent.length, outbox.size()]).toEqual([1, 1, 0])
  })

  test('hidden, a page lets go of the outbox at once, its send under way, and stops there; it drains nothing until shown again', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let held = false
    const { service, delivery, outbox, parcel } = setup(undefined, async (drain) => {
      held = true
      await drain()
      held = false
    })
    service.reply(async () => (await gate, { status: 200, body: { success: true } }))
    outbox.put(parcel('a'))
    outbox.put(parcel('b'))
    const draining = delivery.drain()
    await settle()
    expect(held).toBe(true)
    delivery.persistPending()
    await settle()
    // Let go while 'a' is still under way, and the drain is over: a page in the back/forward cache must hold no lock.
    expect(held).toBe(false)
    await draining
    release()
    await settle()
    // 'a' is answered all the same and leaves the outbox; 'b' waits for a page in view.
    expect([service.sent.length, outbox.all().map((p) => p.id)]).toEqual([1, ['b']])
    await delivery.drain()
    expect(service.sent).toHaveLength(1)
    delivery.shown()
    await delivery.drain()
    expect([service.sent.length, outbox.size()]).toEqual([2, 0])
  })

  test('drain sends what was persisted, one attempt each; a success drains the rest too', async () => {
    const { service, delivery, outbox, parcel } = setup()
    outbox.put(parcel('a'))
    outbox.put(parcel('b'))
    await delivery.drain()
    expect(service.sent.map((r) => r.body.events[0].n)).toEqual(['a', 'b'])
    expect(outbox.size()).toBe(0)

    let down = true
    const flaky = setup(() => (down ? { status: 503 } : { status: 200, body: { success: true } }))
    flaky.outbox.put(flaky.parcel('c'))
    await flaky.delivery.drain()
    expect(flaky.outbox.all().map((p) => p.id)).toEqual(['c'])
    down = false
    await flaky.delivery.deliver(flaky.parcel('d'))
    await settle()
    expect(flaky.outbox.size()).toBe(0)
    expect(flaky.service.sent.map((r) => r.body.events[0].n)).toEqual(['c', 'd', 'c'])
  })
})
