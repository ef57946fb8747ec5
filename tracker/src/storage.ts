/** A string store. Reading or writing browser storage throws in private modes, sandboxed frames and
 * when it is full; such a failure is never an error for the page. */
export interface KeyValue {
  get(key: string): string | null
  set(key: string, value: string): void
  remove(key: string): void
}

const attempt = <T>(use: () => T, fallback: T): T => {
  try {
    return use()
  } catch {
    return fallback
  }
}

/**
 * Browser storage. Where it is unavailable (disabled, private mode, sandboxed frame: access throws)
 * or refuses a write (full, or a quota of 0 as in some private modes), a map in memory serves the
 * page instead: the value is read from memory until a write of that key gets through, so a session
 * renewed in memory only is still the page's session. `refused` is told of each write kept in
 * memory only, which the next page load will not find.
 */
export function webStorage(open: () => Storage | null | undefined, refused?: () => void): KeyValue {
  const memory = new Map<string, string>()
  /** `action` on the storage, or `fallback` where it throws (and where there is no storage at all). */
  const use = <T>(action: (storage: Storage) => T, fallback: T) => attempt(() => action(open()!), fallback)
  return {
    get: (key) => memory.get(key) ?? use((storage) => storage.getItem(key), null),
    set(key, value) {
      if (use((storage) => (storage.setItem(key, value), true), false)) memory.delete(key)
      else {
        memory.set(key, value)
        refused?.()
      }
    },
    remove(key) {
      memory.delete(key)
      use((storage) => storage.removeItem(key), null)
    },
  }
}

const YEAR_SECONDS = 365 * 24 * 3600

/** First-party cookies of a year, the second home of the end-user id (cleared less often together). */
export function cookieStorage(doc: Document): KeyValue {
  const write = (key: string, value: string, maxAge: number) =>
    attempt(() => {
      const secure = doc.location?.protocol === 'https:' ? '; Secure' : ''
      doc.cookie = `${key}=${encodeURIComponent(value)}; path=/; max-age=${maxAge}; SameSite=Lax${secure}`
      return true
    }, false)
  return {
    get: (key) =>
      attempt(() => {
        const found = doc.cookie.split('; ').find((pair) => pair.startsWith(key + '='))
        return (found && decodeURIComponent(found.slice(key.length + 1))) || null
      }, null),
    set: (key, value) => write(key, value, YEAR_SECONDS),
    remove: (key) => void write(key, '', 0),
  }
}

export function readJson<T>(store: KeyValue, key: string): T | null {
  try {
    return JSON.parse(store.get(key) ?? 'null') as T | null
  } catch {
    return null
  }
}

/** A request waiting to be sent; `id` lets a late success remove its persisted copy. */
export interface Parcel {
  id: string
  path: string
  body: Record<string, unknown>
}

/** What the outbox holds at most, in characters of JSON (localStorage gives an origin about 5 MB). */
export const OUTBOX_MAX_CHARS = 2_000_000

export interface Outbox {
  put(parcel: Parcel): void
  /** One write for all of them: each rewrites everything kept. */
  remove(...ids: string[]): void
  /** `id` out and `parcels` in its place, in one write (a parcel split in two is never only in memory). */
  replace(id: string, parcels: Parcel[]): void
  /** Everything kept, oldest first. It stays kept until a success removes it. */
  all(): Parcel[]
  size(): number
  /** Cheap: whether anything is kept, without parsing it. */
  hasAny(): boolean
  /** Parcels dropped to stay within the bound, across page loads. */
  dropped(): number
}

/**
 * Requests that could not be sent, kept in localStorage until the browser is back online or the next
 * page load. Bounded: the oldest parcels go first when the bound is reached, and each one dropped is
 * counted. What the browser's storage refuses (disabled, or full) is kept in memory, as `webStorage`
 * keeps it, and sent from there while the page is open: dropping the oldest until the rest fits lost
 * all of them where the storage takes nothing, and tried a write per parcel at every put.
 */
export function createOutbox(store: KeyValue, key: string, maxChars = OUTBOX_MAX_CHARS): Outbox {
  const droppedKey = key + ':dropped'
  const read = () => readJson<Parcel[]>(store, key) ?? []
  const dropped = () => Number(store.get(droppedKey)) || 0
  const write = (parcels: Parcel[]) => {
    let text = JSON.stringify(parcels)
    let lost = 0
    // The oldest go until the rest fits the bound, each cut from the text (`[first,rest]` becomes
    // `[rest]`) rather than the whole list made again for every one dropped.
    while (text.length > maxChars) {
      text = ++lost < parcels.length ? '[' + text.slice(JSON.stringify(parcels[lost - 1]).length + 2) : '[]'
    }
    store.set(key, text)
    if (lost) store.set(droppedKey, String(dropped() + lost))
  }
  return {
    put: (parcel) => write([...read().filter((p) => p.id !== parcel.id), parcel]),
    remove(...ids) {
      const parcels = read()
      const kept = parcels.filter((p) => !ids.includes(p.id))
      if (kept.length < parcels.length) write(kept)
    },
    replace: (id, parcels) => write(read().flatMap((p) => (p.id === id ? parcels : [p]))),
    all: read,
    size: () => read().length,
    hasAny: () => (store.get(key)?.length ?? 0) > 2,
    dropped,
  }
}
