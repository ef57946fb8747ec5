import type { Identity } from './identity'
import { uuid } from './ids'
import {
  CHUNK_MAX_BYTES,
  EVENT_BATCH_MAX,
  EVENT_FLUSH_MS,
  LIVE_REPLAY_FLUSH_MS,
  REPLAY_FLUSH_MS,
  TELEMETRY_BATCH_MAX,
  TELEMETRY_FLUSH_MS,
  createBatcher,
  type Batcher,
  type Owner,
} from './queue'
import type { Redaction } from './redaction'
import { FULL_SNAPSHOT, META, type RecordedEvent } from './replay'
import { json } from './storage'
import { isErrorLike, toText } from './text'
import type { Clock, PageWindow, Properties } from './types'
import { URL_IN_TEXT, withoutCredentials } from './urls'
import { SDK_VERSION } from './version'

export type Messages = ReturnType<typeof createMessages>

/**
 * An error thrown in a render or animation loop would be reported every frame: the same report (name,
 * message and stack) goes once in a window, and at most ERRORS_PER_WINDOW reports do; so do lines of
 * `console.error`, counted apart. A report is known by its first ERROR_KEY_CHARS: the window holds
 * that much of each, not all of it (up to 96 KB).
 */
export const ERROR_WINDOW_MS = 60_000
export const ERRORS_PER_WINDOW = 20
export const ERROR_KEY_CHARS = 1000
/** What the service keeps of an error's message and stack (in bytes, so never fewer characters). */
export const ERROR_MESSAGE_MAX_CHARS = 32 * 1024
export const ERROR_STACK_MAX_CHARS = 64 * 1024
/** Replay events waiting for their session's full snapshot (see `record`): at most this many, the rest dropped. */
export const HELD_MAX = 1000

/** What the browser tells the service about its surroundings, once per replay chunk. */
function automaticProperties(win: PageWindow, redaction: Redaction) {
  const { navigator, screen, document } = win
  return {
    language: navigator.language,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    screen: screen ? `${screen.width}x${screen.height}` : undefined,
    viewport: `${win.innerWidth}x${win.innerHeight}`,
    // A same-origin referrer keeps its query, and with it the previous page's tokens and searches.
    referrer: redaction.pageUrl(document.referrer) || undefined,
  }
}

/**
 * Every kind of message in WIRE.md's fielded shapes, each with its batcher: custom events, logs,
 * network errors, spans, error reports and replay chunks. Items get their `uuid` or chunk `seq` here,
 * once, so every retry and every persisted copy carries the same ones.
 * Arguments in a row, not one object of them: the bundle keeps no names for them (about 20 B gzipped).
 */
export function createMessages(
  win: PageWindow,
  clock: Clock,
  identity: Identity,
  redaction: Redaction,
  release: string | undefined,
  send: (path: string, body: Record<string, unknown>) => void,
  /** The tracker is stopped, or sending halted: what is queued goes at once, nothing waits for a timer. */
  idle: () => boolean | undefined,
  /** The tracker runs, its recorder (loaded or on its way) taking full snapshots. */
  running: () => boolean,
) {
  let live = false
  /** How many error reports and error lines were not sent, being one of a flood. */
  let flooded = 0
  const now = () => clock.now()
  const owner = (activity: boolean): Owner => ({ sessionId: identity.sessionId(activity), endUserId: identity.endUserId })
  /**
   * Whether a report known by `key` is one of a flood now (see ERROR_WINDOW_MS); remembers it if not.
   * (`sent` is a local, a parameter for the bundle's size budget: callers pass nothing.)
   */
  const floodGate =
    (sent: [key: string, at: number][] = []) =>
    (key: string, at = now()) => {
      key = key.slice(0, ERROR_KEY_CHARS)
      sent = sent.filter(([, time]) => at - time < ERROR_WINDOW_MS)
      if (sent.length >= ERRORS_PER_WINDOW || sent.some(([seen]) => seen === key)) return ++flooded
      sent.push([key, at])
    }
  const errorFlood = floodGate()
  /** A batch's wait; none once stopped, as stop() sends what is queued (what fails goes to the outbox). */
  const wait = (ms: number) => (idle() ? 0 : ms)
  /** The batcher of each telemetry path, made at its first item: those of automatic tracking only where it runs. */
  const telemetry: Record<string, Batcher<Properties>> = {}

  const events = createBatcher<Properties>(clock, () => wait(EVENT_FLUSH_MS), (items, who) => send('/customEvent/batch', { ...who, events: items }), EVENT_BATCH_MAX)
  const environment = automaticProperties(win, redaction)
  const replay = createBatcher<RecordedEvent>(
    clock,
    () => wait(live ? LIVE_REPLAY_FLUSH_MS : REPLAY_FLUSH_MS),
    (items, who) =>
      send('/events', { ...who, windowId: identity.windowId, seq: identity.nextSeq(), events: items, automaticProperties: environment, sdkVersion: SDK_VERSION }),
    Infinity,
    CHUNK_MAX_BYTES,
  )
  /** Replay last: on page hide, what is small goes before the browser's quota for beacons is spent. */
  const all = () => [events, ...Object.values(telemetry), replay]
  /**
   * Sized in bytes of UTF-8, as it goes: a character of JSON is up to 3 of them. By a TextEncoder, not
   * a Blob's size: Chromium registers every Blob with its browser process, some 200 µs an event.
   */
  const utf8 = new TextEncoder()
  const addReplay = (event: RecordedEvent, who: Owner) => replay.add(event, who, utf8.encode(json(event)).length)
  /** The session of the recorder's last full snapshot on this page. */
  let snapshotOf: string | undefined
  /** Replay events waiting for their session's full snapshot, each with its owner. */
  let held: [RecordedEvent, Owner][] = []
  /** What waits goes, stamped no earlier than `at` (the snapshot's time: players order events by time). */
  const letGo = (at = 0) => held.splice(0).forEach(([event, who]) => addReplay(event.timestamp < at ? { ...event, timestamp: at } : event, who))

  /**
   * Adds a telemetry item to the batch that goes to `path` as `field`; `owned`: with its session and
   * end user in it, as the fielded single-item shapes have them. (`who` is a local, a parameter for
   * the bundle's size budget: callers pass the first three or four.)
   */
  const report = (path: string, field: string, item: Properties, owned = true, who = owner(false)) => {
    telemetry[path] ??= createBatcher(clock, () => wait(TELEMETRY_FLUSH_MS), (items, whose) => send(path, { ...whose, [field]: items }), TELEMETRY_BATCH_MAX)
    telemetry[path].add(owned ? { ...item, ...who } : item, who)
  }

  const customEvent = (eventName: string, eventProperties?: Properties) =>
    events.add({ eventName, eventProperties, timestamp: now(), uuid: uuid(now()) }, owner(true))

  /** The page's URL as it may be sent: every page URL the tracker sends goes through `pageUrl`. */
  const here = () => redaction.pageUrl(win.location.href)
  /**
   * Text that may name URLs, each as page URLs go: messages repeat them, and an inline script's stack
   * frames name the page, as it was when it loaded (the URL may have changed since).
   */
  const withPageUrls = (text: string) => withoutCredentials(text.replace(URL_IN_TEXT, redaction.pageUrl))

  return {
    owner,
    customEvent,
    here,
    referrer: environment.referrer,
    /** `$pageview`; the title only where redaction shows it. */
    pageView(url?: string) {
      const { location, document } = win
      const href = redaction.pageUrl(new URL(url ?? location.href, location.href).href)
      customEvent('$pageview', {
        url: href,
        path: new URL(href).pathname,
        referrer: environment.referrer,
        title: redaction.visibleText(document.querySelector('title')),
      })
    },
    navigation(type: string, fromUrl: string, toUrl: string) {
      customEvent('$navigation', { type, from: redaction.pageUrl(fromUrl), to: redaction.pageUrl(toUrl) })
    },
    /**
     * A recorded event; while nobody acts past the session's end, the page's own changes are not kept.
     * A player starts from a full snapshot and cannot apply what precedes it, so while the tracker
     * runs, a session's replay on this page begins with its meta and full snapshot: what a person does,
     * and what is added, before them waits and goes right after them; the page's own changes meanwhile
     * are dropped, the snapshot shows what they made. Stopped, nothing waits: no snapshot is to come.
     */
    record(event: RecordedEvent, activity: boolean) {
      if (!activity && identity.current() === null) return
      const who = owner(activity)
      if (event.type === FULL_SNAPSHOT) {
        addReplay(event, who)
        snapshotOf = who.sessionId
        letGo(event.timestamp)
      } else if (!running() || snapshotOf === who.sessionId || event.type === META) addReplay(event, who)
      else if (activity && held.length < HELD_MAX) held.push([event, who])
    },
    report,
    floodGate,
    withPageUrls,
    error(error: unknown, handled: boolean, context?: Properties) {
      const at = now()
      const { name, message, stack } = (isErrorLike(error) ? error : { message: toText(error) }) as Partial<Error>
      const described = {
        name: name || 'Error',
        message: withPageUrls(String(message)).slice(0, ERROR_MESSAGE_MAX_CHARS),
        stack: typeof stack === 'string' ? withPageUrls(stack).slice(0, ERROR_STACK_MAX_CHARS) : undefined,
      }
      if (errorFlood(json(described), at)) return
      report('/errors', 'errors', { ...described, url: here(), timestampMs: at, release, level: 'error', handled, context })
    },
    /** Error reports and error lines not sent, being one of a flood. */
    flooded: () => flooded,
    /** Everything queued goes now, what waits for a snapshot too (a page hidden or left keeps nothing in memory). */
    flush() {
      letGo()
      all().forEach((batcher) => batcher.flush())
    },
    clear() {
      held = []
      all().forEach((batcher) => batcher.clear())
    },
    /** `liveViewer` switches the replay flush between 3 s and 150 ms (and sends what waits now). */
    answered(data: Record<string, unknown>) {
      if (typeof data.liveViewer !== 'boolean' || data.liveViewer === live) return
      live = data.liveViewer
      replay.flush()
    },
  }
}
