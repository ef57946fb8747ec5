/** The tracker's own log levels, from silent to chatty. */
export type LogLevel = 'none' | 'error' | 'warn' | 'info' | 'debug'

export interface RedactionStrategy {
  /**
   * `privacy-first` (the default): every text and input value is masked except inside
   * `unredactSelectors`. `visibility-first`: only `redactSelectors` and password or card fields are.
   */
  mode: 'privacy-first' | 'visibility-first'
  /** Always masked, in either mode. */
  redactSelectors?: string[]
  /** Shown in privacy-first mode (the starting value of `setUnredactedFields`). */
  unredactSelectors?: string[]
}

/** Each kind of automatic tracking; all are on unless switched off here. */
export interface AutomaticTrackingOptions {
  pageViews?: boolean
  navigation?: boolean
  clicks?: boolean
  rageClicks?: boolean
  forms?: boolean
  /** `console.warn` and `console.error`, sent as logs. */
  console?: boolean
  /** Failed or slow `fetch` and `XMLHttpRequest` requests (never the tracker's own). */
  network?: boolean
  /** `onerror` and `unhandledrejection`. */
  errors?: boolean
  /** A client span for every `fetch` and `XMLHttpRequest`. */
  spans?: boolean
}

export interface TrackerOptions {
  /**
   * Where to send. Default: the relay the script was loaded from, else `<meta name="sightline-ingestion-url">`, else `<page origin>/_sl`.
   * A query or fragment of it is left out: the ingestion paths are added to the base.
   */
  ingestionUrl?: string
  logLevel?: LogLevel
  redactionStrategy?: RedactionStrategy
  enableAutomaticTracking?: boolean
  automaticTrackingOptions?: AutomaticTrackingOptions
  /**
   * Sent with error reports so the server maps stacks through this release's source maps. Trimmed (a
   * VERSION file's newline), and a number (a build number) goes as its text.
   */
  release?: string
}

export interface LoggingConfig {
  level?: LogLevel
  enableConsole?: boolean
  /** Keep the latest entries in sessionStorage for `viewLogs()`. */
  enableStorage?: boolean
}

export interface UserAttributes {
  email?: string
  name?: string
  image?: string
  provider?: string
  [attribute: string]: unknown
}

export type Properties = Record<string, unknown>

/** Timers and time, injectable so every timing can be tested without waiting. */
export interface Clock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** The `fetch` function's shape (without the extras some runtimes add to it). */
export type FetchFunction = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>

/** The page's window with its globals (console, fetch, timers, storage). */
export type PageWindow = Window & typeof globalThis

/** What the tracker runs against; every field defaults to the page's own. For embedding and tests. */
export interface TrackerEnvironment {
  window?: Window
  fetch?: FetchFunction
  clock?: Clock
  /** The URL the tracker's script was loaded from (default: `document.currentScript` at load). */
  scriptUrl?: string | null
}

export interface ConnectionStatus {
  ingestionUrl: string
  /** How `ingestionUrl` was chosen. */
  source: 'option' | 'script' | 'meta' | 'default'
  /**
   * Fetch with the key in its Authorization header was seen failing while the service answered:
   * sends go by beacon, the key in a text/plain body (sticky-beacon); what a beacon cannot carry
   * goes as a CORS-simple fetch.
   */
  blocked: boolean
  /**
   * The service answered the latest request or probe. False after a fetch and the health probe both
   * got no answer while online: the service is down, or a blocklist stops every request to its origin;
   * and while a gateway in front of it (the relay) answers 502 or 504: the service is down.
   */
  reachable: boolean
  /** `fetch` with the Authorization header, or `beacon` while it is blocked (beacons on unload either way). */
  transport: 'fetch' | 'beacon'
  online: boolean
  /** Why sending stopped, if it did. */
  stopped: 'monthly_limit' | 'invalid_key' | null
  /** Batches kept in localStorage, waiting to be sent. */
  queued: number
  /** Items given up on, by reason. */
  dropped: Dropped
  recommendations: string[]
}

/** `getConnectionStatus().dropped`: what was given up on, by reason. */
export interface Dropped {
  /** Requests the full outbox (localStorage) let go, oldest first. */
  outbox: number
  /** Error reports and `console.error` lines held back by flood control. */
  error_flood: number
  /** Requests the service refused as too large that could not be halved. */
  too_large?: number
  /** Kept requests that failed by themselves (500, 408, or a gateway's answer to them alone) on OUTBOX_MAX_FAILURES page loads. */
  failed?: number
  /** Requests the service refused with that status (`rejected_400`, `rejected_404`, ...). */
  [rejected: `rejected_${number}`]: number
}

export interface ConnectionTest {
  ok: boolean
  status: number
  latencyMs: number
  ingestionUrl: string
  blocked: boolean
}

export interface LogEntry {
  time: number
  level: LogLevel
  message: string
}
