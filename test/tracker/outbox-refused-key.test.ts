import { afterEach, describe, expect, test } from 'bun:test'
import { createDelivery } from '@sightline/tracker/delivery'
import { createOutbox, webStorage } from '@sightline/tracker/storage'
import { createTransport } from '@sightline/tracker/transport'
import { fakeClock, settle } from './helpers/clock'
import { later } from './helpers/connection'
import { keeping, openPage, storageOf, type Page } from './helpers/dom'
import { quietLog } from './helpers/quiet'
import { SERVICE_BASE, fakeService } from './helpers/service'
import { KEY, closeAll, tracked } from './helpers/tracker'

afterEach(closeAll)

const OTHER_KEY = 'sl_live_other_tracker'
const parcel = (id: string) => ({ id, path: '/api/ingestion/customEvent/batch', body: { sessionId: 's', endUserId: 'u', events: [{ eventName: id }] } })
const outboxKeys = (localStorage: Record<string, string>, apiKey: string) => Object.keys(localStorage).filter((key) => key.startsWith(`sl_outbox:${apiKey}/`)).sort()
const refused = (code: string) => () => ({ status: 401, body: { success: false, error: { code, message: 'refused' } } })

describe('the outbox of a key core refuses', () => {
  test('401 invalid_api_key (revoked, rotated): what earlier pages kept under that key is dropped and counted, not kept for good; another key\'s outbox stays', async () => {
    const localStorage = { ...keeping(KEY, parcel('01'), parcel('02'), parcel('03')), ...keeping(OTHER_KEY, parcel('09')) }
    const service = fakeService()
    service.reply(refused('invalid_api_key'))
    const t = tracked({ enableAutomaticTracking: false }, { service, storage: { localStorage } })
    await settle()
    // One request told the key is refused; the rest can never be stored either.
    expect(service.sent.length).toBe(1)
    const kept = storageOf(t.win).localStorage
    expect(outboxKeys(kept, KEY)).toEqual([])
    expect(outboxKeys(kept, OTHER_KEY)).toEqual([`sl_outbox:${OTHER_KEY}/09`])
    expect(t.tracker.getConnectionStatus()).toMatchObject({ stopped: 'invalid_key', queued: 0, dropped: { rejected_401: 3 } })
  })

  test('401 missing_api_key (the key did not reach core: a proxy in front dropped it) keeps the outbox: sent otherwise, it may be stored', async () => {
    const service = fakeService()
    service.reply(refused('missing_api_key'))
    const t = tracked({ enableAutomaticTracking: false }, { service, storage: { localStorage: keeping(KEY, parcel('01'), parcel('02')) } })
    await settle()
    expect(outboxKeys(storageOf(t.win).localStorage, KEY)).toHaveLength(2)
    const status = t.tracker.getConnectionStatus()
    expect(status).toMatchObject({ stopped: 'invalid_key', queued: 2 })
    expect(status.dropped.rejected_401).toBeUndefined()
  })

  let page: Page | undefined
  afterEach(() => page?.close())

  test('told by any answer (the heartbeat\'s too), not only by a kept parcel\'s: the outbox is emptied, and each parcel counted', async () => {
    page = openPage()
    const outbox = createOutbox(webStorage(() => page!.win.localStorage), `sl_outbox:${KEY}`)
    const log = quietLog()
    const transport = createTransport(SERVICE_BASE, KEY, fakeService().fetch, page.win, log, fakeClock(), later)
    const stops: string[] = []
    const delivery = createDelivery(transport, outbox, fakeClock(), log, () => {}, (reason) => stops.push(reason))
    for (const id of ['01', '02']) outbox.put(parcel(id))
    expect(delivery.settle({ status: 401, data: { success: false, error: { code: 'invalid_api_key' } } })).toBe(false)
    expect([stops, outbox.size(), delivery.drops()]).toEqual([['invalid_key'], 0, { rejected_401: 2 }])
  })
})

describe('an outbox entry that does not parse (written by other code)', () => {
  test('is removed when read: it leaves the queued count, and the outbox drains to empty', async () => {
    const localStorage = { ...keeping(KEY, parcel('01')), [`sl_outbox:${KEY}/00`]: '{not json' }
    const t = tracked({ enableAutomaticTracking: false }, { storage: { localStorage } })
    await settle()
    expect(t.service.sent.map((request) => request.body.events[0].eventName)).toEqual(['01'])
    expect(outboxKeys(storageOf(t.win).localStorage, KEY)).toEqual([])
    expect(t.tracker.getConnectionStatus().queued).toBe(0)
  })
})
