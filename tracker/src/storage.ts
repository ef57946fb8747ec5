/** A string store. Reading or writing browser storage throws in private modes, sandboxed frames and
 * when it is full; such a failure is never an error for the page. */
export interface KeyValue {
  get(key: string): string | null
  set(key: string, value: string): void
  remove(key: string): void
}

/** A store whose keys can be listed: browser storage (see webStorage). */
export interface KeyList extends KeyValue {
  keys(): string[]
}

/** `use()`, or `fallback` where it throws. */
export const attempt = <T>(use: () => T, fallback: T): T => {
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
export function webStorage(open: () => Storage | null | undefined, refused?: () => void): KeyList {
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
    keys: () => [...new Set([...memory.keys(), ...use((storage) => Array.from({ length: storage.length }, (_, i) => storage.key(i)!), [])])],
  }
}

const YEAR_SECONDS = 365 * 24 * 3600

/** First-party cookies of a year, the second home of the end-user id (cleared less often together). */
export function cookieStorage(doc: Document): KeyValue {
  const write = (key: string, value: string, maxAge: number) =>
    // (`secure` is a local, a parameter for the bundle's size budget: attempt passes nothing.)
    attempt((secure = doc.location?.protocol === 'https:' ? '; Secure' : '') => {
      doc.cookie = `${key}=${encodeURIComponent(value)}; path=/; max-age=${maxAge}; SameSite=Lax${secure}`
      return true
    }, false)
  return {
    get: (key) =>
      // (`found` is a local, a parameter for the bundle's size budget: attempt passes nothing.)
      attempt((found = doc.cookie.split('; ').find((pair) => pair.startsWith(key + '='))) => (found && decodeURIComponent(found.slice(key.length + 1))) || null, null),
    set: (key, value) => write(key, value, YEAR_SECONDS),
    remove: (key) => void write(key, '', 0),
  }
}

/**
 * JSON.stringify, arrays as arrays: a page's `Array.prototype.toJSON` (Prototype.js's, on old sites yet)
 * makes each one a string of JSON, and core refuses the whole batch (`Expected array`), and what is
 * stored comes back as text. The replacer is given what toJSON made; the holder still has the array.
 * Only on such a page: a replacer makes a snapshot's JSON about twice as slow to write.
 */
export const json = (value: unknown) =>
  JSON.stringify(
    value,
    ([] as any).toJSON &&
      function (this: any, key: string, made: unknown) {
        return Array.isArray(this[key]) ? this[key] : made
      },
  )

export const readJson = <T>(store: KeyValue, key: string): T | null => attempt(() => JSON.parse(store.get(key)!), null)

/** A request waiting to be sent; `id` lets a late success remove its persisted copy. */
export interface Parcel {
  id: string
  path: string
  body: Record<string, unknown>
  /** Page loads on which it failed by itself, kept (see delivery's OUTBOX_MAX_FAILURES). */
  failed?: number
}

/** What the outbox holds at most, in characters of JSON (localStorage gives an origin about 5 MB). */
export const OUTBOX_MAX_CHARS = 2_000_000

export interface Outbox {
  put(parcel: Parcel): void
  remove(id: string): void
  /** Everything kept, oldest first. It stays kept until a success removes it. */
  all(): Parcel[]
  /** How many are kept (without reading them). */
  size(): number
  /** Parcels dropped to stay within the bound, across page loads. */
  dropped(): number
}

/**
 * Requests that could not be sent, kept in localStorage until the browser is back online or the next
 * page load, each parcel under a key of its own (`<key>/<id>`). The tabs of an origin share the
 * outbox, and a browser keeps each tab's view of localStorage in step with the others' only some
 * time after their writes: one list under one key, read, changed and written again by two tabs at
 * once, kept what the last writer saw, and parcels the other had just put were lost, never sent. A
 * key per parcel is written, and removed, by itself alone. Parcel ids are UUID v7s (a 413's halves
 * add `.0` and `.1`), so they sort oldest first. Bounded: the oldest parcels go first when the bound
 * is reached, and each one dropped is counted. What the browser's storage refuses (disabled, or
 * full) is kept in memory, as `webStorage` keeps it, and sent from there while the page is open.
 */
export function createOutbox(store: KeyList, key: string, maxChars = OUTBOX_MAX_CHARS): Outbox {
  const droppedKey = key + ':dropped'
  const prefix = key + '/'
  const keys = () => store.keys().filter((name) => name.startsWith(prefix)).sort()
  const dropped = () => +store.get(droppedKey)! || 0
  const remove = (id: string) => store.remove(prefix + id)
  const put = (parcel: Parcel) => {
    store.set(prefix + parcel.id, json(parcel))
    // Newest first: those past the bound go. One that would not fit is passed over, not counted: a
    // parcel larger than the whole bound (a snapshot of megabytes kept offline) goes alone, and what
    // was kept before it stays. (Written tight: this is in the tracker's core, at its size budget.)
    let chars = 0
    let size: number
    const lost = keys()
      .reverse()
      .filter((name) => (size = store.get(name)?.length ?? 0) + chars > maxChars || !(chars += size))
    if (lost.length) {
      lost.forEach(store.remove)
      store.set(droppedKey, String(dropped() + lost.length))
    }
  }
  return {
    put,
    remove,
    // One that does not parse (not ours) is removed: counted by size(), it would never leave.
    all: () => keys().flatMap((name) => readJson<Parcel>(store, name) ?? (store.remove(name), [])),
    size: () => keys().length,
    dropped,
  }
}
