import { attempt } from './storage'
import type { RedactionStrategy } from './types'
import { withoutCredentials, withoutParameterValues } from './urls'

/**
 * Masked in every mode, whatever the selectors say: passwords, also a field whose autocomplete says it
 * holds one ("current-password") when a "show password" button made it a text field before recording
 * began, one-time codes (a sign-in's second factor, "one-time-code"), and card fields, whose
 * autocomplete may name a section or billing/shipping before the cc- token ("billing cc-exp-month": a
 * select's options). Autocomplete's tokens are in any case ("CC-NUMBER"), between any spaces; a
 * section named like one ("section-acc-1") masks too. (A file input's value the recorder masks.)
 */
export const ALWAYS_MASKED = 'input[type=password],[autocomplete*="password" i],[autocomplete*="cc-" i],[autocomplete*="one-time" i]'

export type Redaction = ReturnType<typeof createRedaction>

/** Whether `selector` is valid CSS (an invalid one would make every match throw). */
export const isSelector = (doc: Document, selector: string): boolean => attempt(() => (doc.createDocumentFragment().querySelector(selector), true), false)

/**
 * Whether `el` or an element around it matches `selector`, looking out of shadow roots (to their
 * host) and the page's same-origin frames (to the iframe element), up to the recorded document `top`:
 * a selector that names a custom element or an iframe covers what is rendered inside it.
 */
function within(el: Element | null | undefined, selector: string, top: Document): boolean {
  for (let node: Element | null | undefined = el; node; ) {
    if (node.closest(selector)) return true
    const root = node.getRootNode() as ShadowRoot
    node = root.nodeType === 11 ? root.host : node.ownerDocument === top ? null : node.ownerDocument.defaultView?.frameElement
  }
  return false
}

/**
 * Decides what recordings and automatic events may show. Privacy-first (default) masks every text
 * and input value outside the unredacted selectors; visibility-first masks only `redactSelectors`.
 * Unredacted selectors change through `set` and take effect at `apply`, which the recorder calls
 * right before each full snapshot, so a replay never mixes two rules. Any doubt masks.
 */
export function createRedaction(strategy: RedactionStrategy | undefined, top: Document) {
  const privacyFirst = strategy?.mode !== 'visibility-first'
  const masking = [ALWAYS_MASKED, ...(strategy?.redactSelectors ?? [])].join(',')
  let pending = [...(strategy?.unredactSelectors ?? [])]
  let shown = pending.join(',')

  /** Any doubt masks: an element of none (within no selector, so masked in privacy-first only), or selectors that throw. */
  const masked = (el: Element | null | undefined): boolean => attempt(() => within(el, masking, top) || (privacyFirst && !(shown && within(el, shown, top))), true)

  return {
    privacyFirst,
    masked,
    /**
     * The element's own text as the page renders it, or undefined when any of it is masked: not its
     * inline scripts' (an app's state, which the recorder never records either), nor hidden text.
     */
    visibleText(el: Element | null | undefined): string | undefined {
      if (attempt(() => !el || masked(el) || el.querySelector(masking), true)) return undefined
      return (el as HTMLElement).innerText?.trim().replace(/\s+/g, ' ').slice(0, 200) || undefined
    },
    /**
     * A URL of the page (or its referrer) as it may be sent: without credentials and, in privacy-first
     * mode, without parameter values, where a masked search box sent by GET puts its text.
     */
    pageUrl(url: string): string {
      url = withoutCredentials(url)
      return privacyFirst ? withoutParameterValues(url) : url
    },
    shownSelectors: () => [...pending],
    set(selectors: string[]) {
      pending = [...selectors]
    },
    apply() {
      shown = pending.join(',')
    },
  }
}
