import { Window } from 'happy-dom'
import type { PageWindow } from '@sightline/tracker'

/**
 * happy-dom pages for the tracker. rrweb records through globals (`document`, `Node`,
 * `MutationObserver`, ...), so a page registers its own while open and puts the previous values back
 * when closed; nothing else in the test process sees them afterwards.
 */

/** What rrweb reaches through globals. */
const GLOBALS = [
  'window', 'document', 'Node', 'Element', 'HTMLElement', 'HTMLInputElement', 'HTMLTextAreaElement', 'HTMLSelectElement',
  'HTMLFormElement', 'HTMLIFrameElement', 'HTMLCanvasElement', 'HTMLImageElement', 'HTMLMediaElement', 'HTMLStyleElement',
  'HTMLLinkElement', 'Document', 'DocumentFragment', 'ShadowRoot', 'Text', 'MutationObserver', 'CSSStyleSheet',
  'CSSStyleRule', 'CSSMediaRule', 'CSSSupportsRule', 'CSSConditionRule', 'CSSGroupingRule', 'MouseEvent', 'Event',
] as const

/**
 * rrweb reads nodes through "untainted" accessors: when an accessor's source is not `[native code]`
 * (never, in happy-dom) it takes them from a fresh iframe, and there happy-dom's base `Node` getters
 * (`textContent` is defined per subclass) read nothing. These wrappers dispatch to the node's own
 * getter and say they are native, as a browser's are.
 */
const NATIVE: Record<string, { accessors: string[]; methods: string[] }> = {
  Node: {
    accessors: ['childNodes', 'parentNode', 'parentElement', 'textContent', 'ownerDocument', 'firstChild', 'lastChild', 'nextSibling', 'previousSibling'],
    methods: ['contains', 'getRootNode'],
  },
  Element: { accessors: ['shadowRoot'], methods: ['querySelector', 'querySelectorAll'] },
  ShadowRoot: { accessors: ['host', 'styleSheets'], methods: ['getSelection'] },
}

function looksNative(win: Record<string, any>) {
  const native = (name: string) => () => `function ${name}() { [native code] }`
  if (!win.ShadowRoot.prototype.getSelection) win.ShadowRoot.prototype.getSelection = () => null
  for (const [name, { accessors, methods }] of Object.entries(NATIVE)) {
    const prototype = win[name].prototype
    for (const accessor of accessors) {
      const own = Object.getOwnPropertyDescriptor(prototype, accessor)
      const get = function (this: object) {
        for (let p = Object.getPrototypeOf(this); p && p !== prototype; p = Object.getPrototypeOf(p)) {
          const descriptor = Object.getOwnPropertyDescriptor(p, accessor)
          if (descriptor?.get) return descriptor.get.call(this)
        }
        return own?.get?.call(this)
      }
      get.toString = native(accessor)
      Object.defineProperty(prototype, accessor, { ...own, get, configurable: true })
    }
    for (const method of methods) prototype[method].toString = native(method)
  }
  win.MutationObserver.toString = native('MutationObserver')
}

export interface Page {
  win: PageWindow
  close(): Promise<void>
}

export interface PageOptions {
  /** localStorage content to start with (a reload keeps the origin's storage). */
  localStorage?: Record<string, string>
  sessionStorage?: Record<string, string>
  cookie?: string
  /** localStorage refuses every write, as a full one does (QuotaExceededError). */
  localStorageFull?: boolean
  /**
   * localStorage and sessionStorage throw when the page reaches for them, and Web Locks refuse every
   * request, as where cookies are blocked (SecurityError).
   */
  storageDenied?: boolean
  /** Run scripts of the page (the script-tag tests load t.js; give such a script `async`: happy-dom
   * loads others synchronously, which a server in this same process could never answer). */
  scripts?: boolean
}

/**
 * rrweb keeps the first MutationObserver class it sees for good, and a happy-dom observer works only
 * while its window is open. Every page therefore hands rrweb the observer of one window that stays
 * open for the whole run (an observer observes nodes of any window).
 */
const host = new Window() as unknown as Record<string, any>
looksNative(host)

export function openPage(url = 'http://shop.test/', html = '<!doctype html><html><head><title>Shop</title></head><body></body></html>', options: PageOptions = {}): Page {
  const happy = new Window({ url, settings: { enableJavaScriptEvaluation: !!options.scripts, suppressInsecureJavaScriptEnvironmentWarning: true, disableJavaScriptFileLoading: !options.scripts } })
  const win = happy as unknown as PageWindow & Record<string, any>
  looksNative(win)
  for (const [key, value] of Object.entries(options.localStorage ?? {})) win.localStorage.setItem(key, value)
  for (const [key, value] of Object.entries(options.sessionStorage ?? {})) win.sessionStorage.setItem(key, value)
  if (options.cookie) win.document.cookie = options.cookie
  if (options.localStorageFull) {
    const refuse = () => {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    }
    Object.defineProperty(win.localStorage, 'setItem', { value: refuse })
  }
  if (options.storageDenied) {
    for (const name of ['localStorage', 'sessionStorage']) {
      Object.defineProperty(win, name, {
        get() {
          throw new DOMException('Access is denied for this document.', 'SecurityError')
        },
      })
    }
    const locks = { request: () => Promise.reject(new DOMException('The request was denied.', 'SecurityError')) }
    Object.defineProperty(win.navigator, 'locks', { value: locks })
  }
  win.document.write(html)
  const global = globalThis as Record<string, unknown>
  const previous = GLOBALS.map((name) => [name, Object.getOwnPropertyDescriptor(global, name)] as const)
  for (const name of GLOBALS) {
    const value = name === 'MutationObserver' ? host.MutationObserver : win[name]
    Object.defineProperty(global, name, { value, configurable: true, writable: true })
  }
  return {
    win,
    async close() {
      for (const [name, descriptor] of previous) {
        if (descriptor) Object.defineProperty(global, name, descriptor)
        else delete global[name]
      }
      await happy.happyDOM.close()
    },
  }
}

/** Everything in a page's storage, for the next page of a "reload". */
export function storageOf(win: PageWindow): { localStorage: Record<string, string>; sessionStorage: Record<string, string>; cookie: string } {
  const dump = (storage: Storage) => Object.fromEntries(Array.from({ length: storage.length }, (_, i) => storage.key(i)!).map((key) => [key, storage.getItem(key)!]))
  return { localStorage: dump(win.localStorage), sessionStorage: dump(win.sessionStorage), cookie: win.document.cookie }
}

/** The parcels an outbox (`sl_outbox:<api key>`) keeps in a dump of localStorage, oldest first: one key each. */
export function keptParcels<T = { id: string; path: string; body: any }>(localStorage: Record<string, string>, apiKey: string): T[] {
  const prefix = `sl_outbox:${apiKey}/`
  return Object.keys(localStorage)
    .filter((key) => key.startsWith(prefix))
    .sort()
    .map((key) => JSON.parse(localStorage[key]))
}

/** localStorage holding `parcels` in the outbox of `apiKey`, as an earlier page left them. */
export const keeping = (apiKey: string, ...parcels: { id: string; path: string; body: object }[]): Record<string, string> =>
  Object.fromEntries(parcels.map((parcel) => [`sl_outbox:${apiKey}/${parcel.id}`, JSON.stringify(parcel)]))
