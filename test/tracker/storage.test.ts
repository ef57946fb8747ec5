import { describe, expect, test } from 'bun:test'
import { cookieStorage, createOutbox, webStorage, type Parcel } from '@sightline/tracker/storage'
import { openPage, storageOf } from './helpers/dom'

const parcel = (id: string, size = 10): Parcel => ({ id, path: '/api/ingestion/events', body: { pad: 'x'.repeat(size) } })

/** A Storage that refuses any value longer than `quota` characters, as a full one does. */
function limitedStorage(quota: number) {
  const data = new Map<string, string>()
  const storage = {
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => {
      if (v.length > quota) throw new DOMException('full', 'QuotaExceededError')
      data.set(k, v)
    },
    removeItem: (k: string) => void data.delete(k),
    key: (i: number) => [...data.keys()][i] ?? null,
    get length() {
      return data.size
    },
  } as unknown as Storage
  return { data, storage, setQuota: (chars: number) => (quota = chars) }
}

describe('browser storage, guarded', () => {
  test('a storage that throws (private mode, sandboxed frame) is never an error; memory serves the page, and each write kept there is told', () => {
    let refused = 0
    const store = webStorage(() => {
      throw new DOMException('denied', 'SecurityError')
    }, () => refused++)
    expect(store.get('a')).toBeNull()
    store.set('a', '1')
    expect([store.get('a'), refused]).toEqual(['1', 1])
    store.remove('a')
    expect(store.get('a')).toBeNull()
  })

  test('a write the storage refuses (full) is kept in memory and read from there, until a write of that key gets through', () => {
    const { data, storage, setQuota } = limitedStorage(0)
    data.set('k', 'old')
    data.set('other', 'kept')
    let refused = 0
    const store = webStorage(() => storage, () => refused++)
    store.set('k', 'new')
    expect([store.get('k'), store.get('other'), refused]).toEqual(['new', 'kept', 1])
    expect(data.get('k')).toBe('old')
    setQuota(100)
    store.set('k', 'written')
    expect([data.get('k'), refused]).toEqual(['written', 1])
    // From then on the storage is read again (another tab may write it).
    data.set('k', 'from another tab')
    expect(store.get('k')).toBe('from another tab')
    setQuota(0)
    store.set('k', 'refused')
    store.remove('k')
    expect([store.get('k'), data.has('k')]).toEqual([null, false])
  })

  test('a working storage is read as it is (another tab may have written it)', async () => {
    const page = openPage()
    let refused = 0
    const store = webStorage(() => page.win.localStorage, () => refused++)
    store.set('k', 'v')
    expect([page.win.localStorage.getItem('k'), refused]).toEqual(['v', 0])
    page.win.localStorage.setItem('k', 'from another tab')
    expect(store.get('k')).toBe('from another tab')
    await page.close()
  })

  test('cookies: a year, path /, SameSite=Lax, Secure on https; read back and removed', async () => {
    const written: string[] = []
    const fake = { location: { protocol: 'https:' }, set cookie(value: string) { written.push(value) }, get cookie() { return '' } } as unknown as Document
    cookieStorage(fake).set('sl_uid', 'id with; odd=chars')
    expect(written).toEqual(['sl_uid=id%20with%3B%20odd%3Dchars; path=/; max-age=31536000; SameSite=Lax; Secure'])

    const page = openPage('https://shop.test/')
    const cookies = cookieStorage(page.win.document)
    cookies.set('other', '1')
    cookies.set('sl_uid', 'id with; odd=chars')
    expect(cookies.get('sl_uid')).toBe('id with; odd=chars')
    expect(cookies.get('sl_u')).toBeNull()
    cookies.remove('sl_uid')
    expect(cookies.get('sl_uid')).toBeNull()
    expect(cookies.get('other')).toBe('1')
    await page.close()
  })

  test('a document whose cookies throw (sandboxed frame) reads nothing and writes nothing', () => {
    const sandboxed = { get cookie(): string { throw new DOMException('sandboxed', 'SecurityError') }, set cookie(_: string) { throw new DOMException('sandboxed', 'SecurityError') } } as unknown as Document
    const cookies = cookieStorage(sandboxed)
    expect(() => cookies.set('a', '1')).not.toThrow()
    expect(cookies.get('a')).toBeNull()
  })
})

describe('outbox: what could not be sent, kept in localStorage', () => {
  test('keeps parcels in order of their ids (UUID v7s, by time) until removed; one with the same id replaces the kept one', () => {
    const outbox = createOutbox(webStorage(() => null as unknown as Storage), 'q')
    expect(outbox.size()).toBe(0)
    outbox.put(parcel('b'))
    outbox.put(parcel('a'))
    outbox.put({ ...parcel('b'), path: '/again' })
    expect(outbox.all().map((p) => [p.id, p.path])).toEqual([['a', '/api/ingestion/events'], ['b', '/again']])
    expect(outbox.size()).toBe(2)
    outbox.remove('a')
    expect(outbox.all().map((p) => [p.id, p.path])).toEqual([['b', '/again']])
    outbox.remove('b')
    expect(outbox.all()).toEqual([])
    expect(outbox.size()).toBe(0)
  })

  test("each parcel under a key of its own, beside the page's other keys: putting one never rewrites another", async () => {
    const page = openPage()
    const store = webStorage(() => page.win.localStorage)
    store.set('sl_session', 'kept')
    const outbox = createOutbox(store, 'sl_outbox:k')
    outbox.put(parcel('1'))
    outbox.put(parcel('2'))
    // What another tab put meanwhile is read as the outbox's.
    page.win.localStorage.setItem('sl_outbox:k/0', JSON.stringify(parcel('0')))
    expect(storageOf(page.win).localStorage).toEqual({
      sl_session: 'kept',
      'sl_outbox:k/0': JSON.stringify(parcel('0')),
      'sl_outbox:k/1': JSON.stringify(parcel('1')),
      'sl_outbox:k/2': JSON.stringify(parcel('2')),
    })
    expect(outbox.all().map((p) => p.id)).toEqual(['0', '1', '2'])
    await page.close()
  })

  test('bounded: the oldest go first, one larger than the whole bound alone, and each one dropped is counted (across page loads)', () => {
    const store = webStorage(() => null as unknown as Storage)
    const outbox = createOutbox(store, 'q', 400)
    for (const id of ['1', '2', '3', '4', '5']) outbox.put(parcel(id, 50))
    const kept = outbox.all().map((p) => p.id)
    expect(kept.at(-1)).toBe('5')
    expect(kept.length).toBeLessThan(5)
    expect(outbox.dropped()).toBe(5 - kept.length)
    expect(createOutbox(store, 'q', 400).dropped()).toBe(5 - kept.length)
    // One parcel larger than the whole bound goes alone: what was kept stays.
    outbox.put(parcel('huge', 1000))
    expect(outbox.all().map((p) => p.id)).toEqual(kept)
    expect(outbox.dropped()).toBe(5 - kept.length + 1)
  })

  test('dropping many parcels to fit serializes none of them again: only the one put is', () => {
    const store = webStorage(() => null)
    const small = Array.from({ length: 200 }, (_, i) => parcel(String(i).padStart(3, '0'), 40))
    const kept = JSON.stringify(small).length
    const outbox = createOutbox(store, 'q', kept + 100)
    for (const p of small) outbox.put(p)
    const stringify = JSON.stringify
    let chars = 0
    JSON.stringify = ((...args: Parameters<typeof stringify>) => {
      const text = stringify(...args)
      chars += text.length
      return text
    }) as typeof JSON.stringify
    const large = parcel('large', kept)
    try {
      outbox.put(large)
    } finally {
      JSON.stringify = stringify
    }
    expect(outbox.all().map((p) => p.id)).toEqual(['large'])
    expect(outbox.dropped()).toBe(200)
    expect(chars).toBe(JSON.stringify(large).length)
  })

  test('a storage that refuses every write (full, or a quota of 0): every parcel is kept in memory, in order, none dropped, each put one write attempt', () => {
    const { data, storage } = limitedStorage(0)
    let attempts = 0
    const outbox = createOutbox(webStorage(() => storage, () => attempts++), 'q')
    for (const id of ['1', '2', '3', '4']) outbox.put(parcel(id, 40))
    expect(outbox.all().map((p) => p.id)).toEqual(['1', '2', '3', '4'])
    expect([outbox.dropped(), attempts, data.size]).toEqual([0, 4, 0])
    outbox.remove('1')
    outbox.remove('3')
    expect(outbox.all().map((p) => p.id)).toEqual(['2', '4'])
  })

  test("the browser's quota refusing a parcel: it is kept in memory, beside those stored, and written once it fits", () => {
    const { data, storage, setQuota } = limitedStorage(JSON.stringify(parcel('1', 40)).length)
    const outbox = createOutbox(webStorage(() => storage), 'q')
    for (const id of ['1', '2', '3']) outbox.put(parcel(id, id === '2' ? 80 : 40))
    expect(outbox.all().map((p) => p.id)).toEqual(['1', '2', '3'])
    expect(outbox.dropped()).toBe(0)
    expect([...data.keys()].sort()).toEqual(['q/1', 'q/3'])
    setQuota(1000)
    outbox.put(parcel('2', 80))
    expect([...data.keys()].sort()).toEqual(['q/1', 'q/2', 'q/3'])
    outbox.remove('1')
    expect(outbox.all().map((p) => p.id)).toEqual(['2', '3'])
    expect([...data.keys()].sort()).toEqual(['q/2', 'q/3'])
  })
})
