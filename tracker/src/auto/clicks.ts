import { idOf, listen, type Undo } from '../dom'
import type { Properties } from '../types'
import { withoutQuery } from '../urls'
import type { AutoContext } from '.'

/** Three clicks within a second and 30 px of each other are a rage click (reported once per burst). */
export const RAGE_CLICKS = 3
export const RAGE_WINDOW_MS = 1000
export const RAGE_RADIUS_PX = 30
const SELECTOR_DEPTH = 4

/** A short CSS path to the element, like `main > form#pay > button.primary`. */
export function selectorOf(el: Element): string {
  const parts: string[] = []
  for (let node: Element | null = el; node && parts.length < SELECTOR_DEPTH && node.tagName !== 'BODY'; node = node.parentElement) {
    const id = idOf(node)
    const classes = [...node.classList].slice(0, 2).map((name) => '.' + name).join('')
    parts.unshift(node.tagName.toLowerCase() + (id ? '#' + id : '') + classes)
    if (id) break
  }
  return parts.join(' > ')
}

/**
 * `el`, or none when it holds more than 1,000 nodes and characters of text (a node counts one, a text
 * its length): the walk stops there, so describing a click on the page background, a long list or a log
 * costs what one on a button does, not a layout and copy of all their text to keep 200 characters.
 */
function bounded(el: Element): Element | undefined {
  for (let budget = 1e3, walker = el.ownerDocument.createTreeWalker(el), node; (node = walker.nextNode()); ) if ((budget -= 1 + (node.nodeValue?.length ?? 0)) < 0) return
  return el
}

/**
 * What a click shows of its element; the text only where redaction lets it be seen, and none of a
 * large element (the page's body, a long list), which its tag and place describe.
 */
export function describeElement(el: Element, context: AutoContext): Properties {
  return {
    tag: el.tagName.toLowerCase(),
    id: idOf(el),
    selector: selectorOf(el),
    text: context.redaction.visibleText(bounded(el)),
    // Like form actions and requests: without the query and fragment, which often carry tokens (signed
    // links, resets); of a `mailto:` or `data:` link (a download made in the page), only the scheme.
    href: el.hasAttribute('href') ? withoutQuery(el.getAttribute('href')!, context.win.document.baseURI) : undefined,
  }
}

export function trackClicks(context: AutoContext, clicks: boolean, rageClicks: boolean): Undo[] {
  let recent: { x: number; y: number; at: number }[] = []
  /** The burst under way was reported. */
  let raged = false
  /** The control a clicked label passes the click on to, until the end of this task. */
  let passedTo: Element | null | undefined
  return [listen<MouseEvent>(
    context.win.document,
    'click',
    (event) => {
      const target = event.target as Element | null
      // Not an element's; nor a label's click going on to its control as a click of its own, at the same
      // place and in the same task: a person's one click, not two (nor, twice, a rage click).
      if (!target?.tagName || target === passedTo) return
      passedTo = (target.closest('label') as HTMLLabelElement | null)?.control
      if (passedTo) context.win.setTimeout(() => (passedTo = undefined))
      const el = target.closest('a,button,input,select,textarea,label,[role=button],[onclick]') ?? target
      const properties = describeElement(el, context)
      if (clicks) context.customEvent('$click', properties)
      if (!rageClicks) return
      const at = context.now()
      const { clientX: x, clientY: y } = event
      recent = recent.filter((c) => at - c.at < RAGE_WINDOW_MS && Math.hypot(c.x - x, c.y - y) <= RAGE_RADIUS_PX)
      // A burst goes on while each click joins one before it (clicking at about 3 a second keeps three
      // in the window at every click); one that joins none (a pause, another place) begins the next.
      if (!recent.length) raged = false
      recent.push({ x, y, at })
      if (recent.length === RAGE_CLICKS && !raged) {
        raged = true
        context.customEvent('$rageclick', { ...properties, clicks: RAGE_CLICKS })
      }
    },
    true,
  )]
}
