import type { RedactionStrategy } from './types'

/** Masked in every mode, whatever the selectors say. */
export const ALWAYS_MASKED = 'input[type=password],[autocomplete^=cc-]'

export type Redaction = ReturnType<typeof createRedaction>

/** Whether `selector` is valid CSS (an invalid one would make every match throw). */
export function isSelector(doc: Document, selector: string): boolean {
  try {
    doc.createDocumentFragment().querySelector(selector)
    return true
  } catch {
    return false
  }
}

/**
 * Decides what recordings and automatic events may show. Privacy-first (default) masks every text
 * and input value outside the unredacted selectors; visibility-first masks only `redactSelectors`.
 * Unredacted selectors change through `set` and take effect at `apply`, which the recorder calls
 * right before each full snapshot, so a replay never mixes two rules. Any doubt masks.
 */
export function createRedaction(strategy: RedactionStrategy | undefined) {
  const privacyFirst = strategy?.mode !== 'visibility-first'
  const masking = [ALWAYS_MASKED, ...(strategy?.redactSelectors ?? [])].join(',')
  let pending = [...(strategy?.unredactSelectors ?? [])]
  let shown = pending.join(',')

  const masked = (el: Element | null | undefined): boolean => {
    if (!el) return privacyFirst
    try {
      return !!el.closest(masking) || (privacyFirst && !(shown && el.closest(shown)))
    } catch {
      return true
    }
  }

  return {
    privacyFirst,
    masked,
    /** The element's own text, or undefined when any of it is masked. */
    visibleText(el: Element | null | undefined): string | undefined {
      try {
        if (!el || masked(el) || el.querySelector(masking)) return undefined
      } catch {
        return undefined
      }
      return el.textContent?.trim().replace(/\s+/g, ' ').slice(0, 200) || undefined
    },
    selectors: () => [...pending],
    set(selectors: string[]) {
      pending = [...selectors]
    },
    apply() {
      shown = pending.join(',')
    },
  }
}
