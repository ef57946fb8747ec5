import type { AutoContext } from './auto'
import { API, resolveIngestionBase, type IngestionBase } from './config'
import { createDelivery, type Delivery } from './delivery'
import { STORAGE_REFUSED, connectionStatus } from './diagnostics'
import { listen, pageClock, type Undo } from './dom'
import { guardMethods, strings } from './guard'
import { createIdentity, type Identity } from './identity'
import { uuid } from './ids'
import { createLogger, type Logger } from './log'
import { createMessages, type Messages } from './messages'
import type { Recording } from './record'
import { createRedaction, isSelector, type Redaction } from './redaction'
import { asRecordedEvent, type RecordedEvent } from './replay'
import { cookieStorage, createOutbox, webStorage, type Outbox } from './storage'
import { asProperties } from './text'
import { createTransport, type Transport } from './transport'
import type {
  Clock,
  ConnectionStatus,
  ConnectionTest,
  LogEntry,
  LoggingConfig,
  PageWindow,
  Properties,
  TrackerEnvironment,
  TrackerOptions,
  UserAttributes,
} from './types'
import { SDK_VERSION } from './version'

export type * from './types'
export { SDK_VERSION }

/** The script this code runs from, read while it is evaluated (a classic script has one). */
const loadedFrom = (globalThis.document?.currentScript as HTMLScriptElement | null | undefined)?.src

/** The browser tracker: records sessions, events, logs, errors and traces and sends them safely. */
export class ServiceTracker {
  static #instance: ServiceTracker | undefined

  /**
   * The page's tracker. A second call with the same key returns the same instance; with another key
   * the first one stops. Identifiers persist across page loads either way. Only without a window
   * does it throw.
   */
  static init(apiKey: string, options: TrackerOptions = {}, environment: TrackerEnvironment = {}): ServiceTracker {
    const win = (environment.window ?? globalThis.window) as PageWindow | undefined
    if (!win) throw new Error('ServiceTracker runs in a browser window')
    const current = ServiceTracker.#instance
    if (current && current.#apiKey === apiKey && current.#win === win) return current
    current?.stop()
    try {
      return (ServiceTracker.#instance = new ServiceTracker(apiKey, Object(options), environment, win))
    } catch (error) {
      // An option it cannot use (an unparseable ingestionUrl, selectors that are no list): the
      // defaults, privacy-first, rather than no tracker, or an exception in the page.
      const tracker = (ServiceTracker.#instance = new ServiceTracker(apiKey, {}, environment, win))
      tracker.#log.warn(`init: ${error}; the options are ignored`)
      return tracker
    }
  }

  readonly #apiKey: string
  readonly #win: PageWindow
  readonly #options: TrackerOptions
  readonly #clock: Clock
  readonly #log: Logger
  readonly #identity: Identity
  readonly #redaction: Redaction
  readonly #base: IngestionBase
  readonly #transport: Transport
  readonly #outbox: Outbox
  readonly #delivery: Delivery
  readonly #messages: Messages
  /** Page lifecycle listeners (flush on hide, drain when online), from `init` until `stop`. */
  #lifecycle: Undo[] = []
  /** What `start` set up: automatic tracking, presence. */
  #running: Undo[] = []
  #recording: Recording | undefined
  #started = false
  /** Bumped by every start and stop, so a module that loads late knows whether it is still wanted. */
  #generation = 0
  /**
   * Sends go by beacon, at once: while the page is being hidden, and from its page hide until it is
   * shown again (the page's own pagehide listeners run after the tracker's, and no timer runs on a
   * page that is gone). The visibilitychange and unload that follow the page hide (the spec's order,
   * and Chromium's) do not end it: what the page records in their listeners goes by beacon too.
   */
  #unloading?: boolean
  /** localStorage refused a write: the tracker goes on in memory, and says so. */
  #storageRefused = false

  private constructor(apiKey: string, options: TrackerOptions, environment: TrackerEnvironment, win: PageWindow) {
    this.#apiKey = apiKey
    this.#win = win
    this.#options = options
    const clock = (this.#clock = environment.clock ?? pageClock(win))
    const now = () => clock.now()
    const local = webStorage(
      () => win.localStorage,
      () => (this.#storageRefused ||= (log.warn(STORAGE_REFUSED), true)),
    )
    // A frame shares its tab's sessionStorage with the page around it, whose tracker keeps its window
    // there: a frame's window is its own, in memory.
    const tab = webStorage(() => (win == win.top ? win.sessionStorage : null))
    const log = (this.#log = createLogger(options.logLevel, tab, win.console, now))
    guardMethods(this, ServiceTracker.prototype, log.warn)
    this.#identity = createIdentity(local, tab, cookieStorage(win.document), now, () => uuid(now()), () =>
      // The first events of a new session need a full snapshot to replay; not from inside rrweb's emit.
      this.#recording && clock.setTimeout(() => this.#recording?.snapshot(), 0),
    )
    this.#redaction = createRedaction(options.redactionStrategy, win.document)
    this.#base = resolveIngestionBase(
      options.ingestionUrl,
      environment.scriptUrl === undefined ? loadedFrom : environment.scriptUrl,
      win.document.querySelector('meta[name="sightline-ingestion-url"]')?.getAttribute('content'),
      // A frame with no URL of its own (about:srcdoc, about:blank) has its parent's base URL.
      win.location.origin == 'null' ? win.document.baseURI : win.location.href,
    )
    this.#transport = createTransport(this.#base.base, apiKey, environment.fetch ?? win.fetch.bind(win), win, log, clock, connection)
    const outboxKey = 'sl_outbox:' + apiKey
    this.#outbox = createOutbox(local, outboxKey)
    this.#delivery = createDelivery(
      this.#transport,
      this.#outbox,
      clock,
      log,
      (data) => this.#messages.answered(data),
      // 429, `monthlyLimitReached` or a refused key: everything stops (delivery says why).
      () => (this.#stopRunning(), this.#messages.clear()),
      // The Web Locks API: a tab that finds the lock held leaves the drain to its holder. Without one
      // (an insecure context), or where it refuses (storage blocked: SecurityError), the tab drains.
      // (A drain that threw, which the request passes on, runs once more: a parcel is stored once.)
      (drain) => win.navigator.locks?.request(outboxKey, { ifAvailable: true }, (lock) => lock && drain()).catch(drain) ?? drain(),
    )
    // Core refuses an error report whose release is no text or has a control character (a VERSION file's
    // trailing newline), and every report of its batch with it: a build number goes as its text, trimmed.
    const release = options.release && ('' + options.release).trim()
    this.#messages = createMessages(
      win,
      clock,
      this.#identity,
      this.#redaction,
      release,
      (path, body) => this.#send(path, body),
      () => this.#delivery.idle || this.#unloading,
      () => this.#started,
    )
    this.#listen()
  }

  /** Starts recording the session and automatic tracking (page views, clicks, errors, ...). */
  start(): void {
    if (this.#started || this.#delivery.halted) return
    this.#started = true
    const generation = ++this.#generation
    this.#listen()
    const { enableAutomaticTracking = true, automaticTrackingOptions } = this.#options
    // The recorder (rrweb), automatic tracking and presence are modules of their own: the script-tag
    // build has them inside, and an app's bundler keeps them out of the first load. Each starts as it
    // arrives, in any order; not if the tracker was stopped (or restarted) meanwhile. What the page
    // throws before automatic tracking is there waits for it: the first 50 (at most 20 a minute are
    // sent), so that a module that never arrives (a chunk gone after a deploy) holds no more.
    const win = this.#win
    const early: Event[] = []
    const keep = (event: Event) => early.length < 50 && early.push(event)
    if (enableAutomaticTracking) {
      const keeping = [listen(win, 'error', keep), listen(win, 'unhandledrejection', keep)]
      this.#running.push(...keeping)
      this.#load(automaticTracking(), generation, ({ installAutomaticTracking }) => {
        for (const undo of keeping) undo()
        const context: AutoContext = { early, ...this.#messages, win, now: () => this.#clock.now(), redaction: this.#redaction, base: this.#base.base }
        this.#running.push(...installAutomaticTracking(context, automaticTrackingOptions))
      })
    }
    this.#load(import('./record'), generation, ({ startRecording }) => {
      this.#recording = startRecording(this.#redaction, (event, activity) => this.#messages.record(event, activity))
    })
    this.#load(import('./presence'), generation, ({ startPresence }) => {
      this.#running.push(startPresence(win, this.#clock, this.#identity, this.#transport, this.#delivery, this.#messages))
    })
  }

  /** Stops recording and automatic tracking, sends what is queued, and removes timers and listeners. */
  stop(): void {
    this.#stopRunning()
    this.#messages.flush()
    // No page hide will keep them now: what was sent or waits is kept until stored, what fails later at once.
    this.#delivery.persistPending(true)
    for (const undo of this.#lifecycle.splice(0)) undo()
    this.#identity.releaseTab()
  }

  customEvent(eventName: string, properties?: Properties): void {
    if (typeof eventName !== 'string' || !eventName) return this.#log.warn('customEvent needs an event name')
    const copy = this.#properties(properties, eventName)
    if (copy !== false) this.#messages.customEvent(eventName, copy)
  }

  /** A raw event into the recording: an rrweb event as it is, anything else as an rrweb custom event. */
  addEvent(event: unknown): void {
    const recorded = this.#properties(asRecordedEvent(event as RecordedEvent, this.#clock.now()), 'addEvent')
    if (recorded) this.#messages.record(recorded, true)
  }

  /**
   * Merges the properties into the end user's attributes; the `endUserId` stays the same. Refused by
   * the service (a value nested too deep, too large), they are taken back, each key to what it was:
   * kept, every later identify would carry them and be refused too.
   */
  async identifyUser(user: { userProperties: UserAttributes }): Promise<string> {
    const userProperties = this.#properties(user?.userProperties ?? 0, 'identifyUser')
    if (!userProperties) return this.#identity.endUserId
    const before = this.#identity.attributes()
    const userAttributes = { ...before, ...userProperties }
    this.#identity.setAttributes(userAttributes)
    const { sessionId, endUserId } = this.#messages.owner(true)
    // Taken back only from the user it was sent for: after a logout meanwhile, the attributes are another's.
    if ((await this.#send('/user', { userId: endUserId, userAttributes, sessionId })) === 0 && endUserId == this.#identity.endUserId) {
      const now = this.#identity.attributes()
      // A key that was not there before is undefined, which the stored JSON leaves out.
      for (const key in userProperties) now[key] = before[key]
      this.#identity.setAttributes(now)
    }
    return endUserId
  }

  getUserAttributes(): UserAttributes {
    return this.#identity.attributes()
  }

  /** Forgets the identified user: a new anonymous end user in a new session. */
  logout(): void {
    this.#messages.flush()
    this.#identity.reset()
    this.#recording?.snapshot()
  }

  groupIdentify(groupType: string, groupKey: string, groupProperties?: Properties): void {
    strings(groupType, groupKey)
    const copy = this.#properties(groupProperties, 'groupIdentify')
    if (copy !== false) void this.#send('/groupidentify', { ...this.#messages.owner(true), groupType, groupKey, groupProperties: copy })
  }

  /** Reports a handled error (with `release`, so the server can map its stack through source maps). */
  captureError(error: unknown, context?: Properties): void {
    this.#messages.error(error, true, this.#properties(context, 'captureError') || undefined)
  }

  /** A page view of `url` (default: the current URL). */
  trackPageView(url?: string): void {
    this.#messages.pageView(url)
  }

  /** A navigation of `type` (push, pop, replace, ...) from one URL to another. */
  trackNavigationEvent(type: string, fromUrl: string, toUrl: string): void {
    strings(type, fromUrl, toUrl)
    this.#messages.navigation(type, fromUrl, toUrl)
  }

  /** Privacy-first mode: these selectors (and what is inside them) are shown, from the next full snapshot. */
  setUnredactedFields(selectors: string[]): void {
    if (!this.#redaction.privacyFirst) return this.#log.warn('unredacted fields apply in privacy-first mode only')
    this.#showFields(
      // A selector that is no string or no valid CSS is left out (the warning is falsy).
      selectors.filter((selector) => (typeof selector === 'string' && isSelector(this.#win.document, selector)) || this.#log.warn('ignored an invalid selector: ' + selector)),
    )
  }

  clearUnredactedFields(): void {
    this.#showFields([])
  }

  hasUnredactedFields(): boolean {
    return this.#redaction.shownSelectors().length > 0
  }

  getUnredactedFields(): string[] {
    return this.#redaction.shownSelectors()
  }

  getSessionId(): string {
    return this.#identity.sessionId(false)
  }

  getCurrentUrl(): string {
    return this.#win.location.href
  }

  getUserInfo() {
    const attributes = this.#identity.attributes()
    return {
      endUserId: this.#identity.endUserId,
      sessionId: this.getSessionId(),
      windowId: this.#identity.windowId,
      attributes,
      identified: Object.keys(attributes).length > 0,
      preexistingUser: this.#identity.preexisting,
    }
  }

  /** Whether this browser had an end-user id before this page load. */
  isPreexistingUser(): boolean {
    return this.#identity.preexisting
  }

  /**
   * Calls the (deprecated) init endpoint once, the only caller of it, and says what happened. Where
   * connection.js cannot be loaded (offline, blocked, gone after a deploy), a failed test, as the page
   * can show it: the promise never rejects.
   */
  async testConnection(): Promise<ConnectionTest> {
    try {
      return await (await connection()).testConnection(this.#transport, this.#messages, this.#clock, this.#base.base)
    } catch {
      return { ingestionUrl: this.#base.base, blocked: false, ok: false, status: 0, latencyMs: 0 }
    }
  }

  getConnectionStatus(): ConnectionStatus {
    return connectionStatus({
      ingestionUrl: this.#base.base,
      source: this.#base.source,
      blocked: this.#transport.blocked,
      reachable: this.#transport.answering,
      online: this.#transport.online(),
      stopped: this.#delivery.halted,
      queued: this.#outbox.size(),
      dropped: { ...this.#delivery.drops(), outbox: this.#outbox.dropped(), error_flood: this.#messages.flooded() },
    }, this.#win.location.href, this.#storageRefused)
  }

  viewLogs(): LogEntry[] {
    return this.#log.entries()
  }

  configureLogging(config: LoggingConfig): void {
    this.#log.configure(config)
  }

  /**
   * Properties as they are at the call (see asProperties); false, with a warning, for what cannot be
   * sent (a cycle, a BigInt, not an object): sent, it would sink the whole batch it travels in (and
   * measuring it would throw into the page).
   */
  #properties<T>(value: T, what: string) {
    const copy = asProperties(value)
    if (copy === false) this.#log.warn(`${what}: not a JSON object; not sent`)
    return copy
  }

  #send(path: string, body: Record<string, unknown>): Promise<unknown> {
    return this.#delivery.deliver({ id: uuid(this.#clock.now()), path: API + path, body }, this.#unloading)
  }

  #showFields(selectors: string[]) {
    this.#redaction.set(selectors)
    if (this.#recording) this.#recording.snapshot()
    else this.#redaction.apply()
  }

  /** Runs `started` with a module `start` loads, unless the tracker was stopped (or restarted) meanwhile. */
  #load<M>(module: Promise<M>, generation: number, started: (module: M) => void) {
    module.then((loaded) => generation === this.#generation && started(loaded)).catch((error) => this.#log.error('start: ' + error))
  }

  #listen() {
    if (this.#lifecycle.length) return
    // A page hide seen by listeners since removed (stop() in the page's own pagehide listener, then
    // start() when shown from the cache) is over: left unloading, every send went by beacon, unbatched.
    this.#unloading = false
    const win = this.#win
    const { document } = win
    this.#lifecycle = [
      listen(win, 'pagehide', () => (this.#identity.releaseTab(), this.#hide(true))),
      // Hidden after the page hide (the spec's order, and Chromium's): it left, and stays unloading.
      listen(document, 'visibilitychange', () => (document.visibilityState === 'hidden' ? this.#hide(this.#unloading) : this.#delivery.shown())),
      listen(win, 'online', this.#delivery.drain),
      listen<PageTransitionEvent>(win, 'pageshow', (event) => {
        this.#unloading = false
        if (!event.persisted) return
        this.#identity.holdTab()
        this.#delivery.shown()
        // Back from the back/forward cache: the tab may have shown other pages meanwhile, whose
        // snapshots the replay of this window would go on from.
        this.#recording?.snapshot()
      }),
    ]
    this.#identity.holdTab()
    void this.#delivery.resume()
  }

  /**
   * Hidden or unloading: what is in flight or waiting persists, what is queued goes by beacon (on page
   * hide, presence ends after it). `left`: the page is gone, and stays unloading until it is shown again.
   */
  #hide(left?: boolean) {
    if (this.#delivery.halted) return
    this.#unloading = true
    // First what fetch still carries (its answer may never come), then the beacons, which keep
    // only what they could not hand over. (Neither throws: sends are asynchronous.)
    this.#delivery.persistPending()
    this.#messages.flush()
    this.#unloading = left
  }

  #stopRunning() {
    this.#started = false
    this.#generation++
    this.#recording?.stop()
    this.#recording = undefined
    for (const undo of this.#running.splice(0)) undo()
  }
}

/**
 * auto.js, imported by `start()`. Named here, at the end, as connection.js is: t.js's build places each
 * module imported later where index.ts first names it, so both then sit after rrweb, beside the core,
 * within gzip's window of the words they share with it (about 60 B less of t.js, gzipped).
 */
const automaticTracking = () => import('./auto')

/** connection.js: gzip and the reachability probe, which the transport loads when first needed, and `testConnection()`. */
const connection = () => import('./connection')
