import { idOf, listen, type Undo } from '../dom'
import type { Properties } from '../types'
import { withoutQuery } from '../urls'
import type { AutoContext } from '.'

/** Three clicks within a second and 30 px of each other are a rage click (reported once per burst). */
export const RAGE_CLICKS = 3
export const RAGE_WINDOW_MS = 1000
export const RAGE_RADIUS_PX = 30
const SELECTOR_DEPTH = 4

/**
 * A short CSS path to the element, like `main > form#pay > button.primary`; out of a shadow root, on
 * from its host (`shop-cart#cart > button.pay`), the component it is in.
 */
export function selectorOf(el: Element): string {
  const parts: string[] = []
  for (let node: Element | undefined = el; node && parts.length < SELECTOR_DEPTH && node.tagName != 'BODY'; node = node.parentElement ?? (node.parentNode as ShadowRoot | null)?.host) {
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
 * large element (the page's body, a long list), which its tag and place describe. (`href` is a local,
 * a parameter for t.js's size budget: callers pass nothing.)
 */
export function describeElement(el: Element, context: AutoContext, href = el.getAttribute('href')): Properties {
  return {
    tag: el.tagName.toLowerCase(),
    id: idOf(el),
    selector: selectorOf(el),
    text: context.redaction.visibleText(bounded(el)),
    // Like form actions and requests: without the query and fragment, which often carry tokens (signed
    // links, resets); of a `mailto:` or `data:` link (a download made in the page), only the scheme.
    href: href == null ? undefined : withoutQuery(href, el.baseURI),
  }
}

export function trackClicks(context: AutoContext, clicks: boolean, rageClicks: boolean): Undo[] {
  /** The clicks of the burst under way that are still in its window: where (x, y) and when. */
  let recent: number[][] = []
  /** The burst under way was reported. */
  let raged = false
  /** The control a clicked label passes the click on to, until the end of this task. */
  let passedTo: Element | null | undefined
  // At the window, before any listener on the document: a page's that stops the click there hides nothing.
  return [listen<MouseEvent>(
    context.win,
    'click',
    (event) => {
      // Where it was clicked, inside a component's open shadow root too (the event's target is the host
      // there: every click in an app rendered in one would be the app's).
      const target = event.composedPath()[0] as Element
      // Not an element's; nor a label's click going on to its control as a click of its own, at the same
      // place and in the same task: a person's one click, not two (nor, twice, a rage click).
      if (!target.tagName || target == passedTo) return
      passedTo = (target.closest('label') as HTMLLabelElement | null)?.control
      setTimeout(() => (passedTo = undefined))
      const el = target.closest('a,button,input,select,textarea,label,[role=button],[onclick]') ?? target
      // A click no pointer made (detail 0: the arrow key that checks the next radio of a group, Space on
      // a box, a script's) on a masked radio or checkbox says which is chosen, not where a person clicked.
      if (!event.detail && el.matches('[type=radio],[type=checkbox]') && context.redaction.masked(el)) return
      const properties = describeElement(el, context)
      if (clicks) context.customEvent('$click', properties)
      // Only a person's pointer rages: a click made by script (`el.click()`, a dispatched event;
      // isTrusted false) or by the keyboard (Enter or Space on a button, repeated as a key is held;
      // detail 0) is no part of a burst, nor makes a person's two clicks three. It is a $click still: it
      // does what a click does (opens, submits), as a test driving the page or an app's own button does.
      if (!rageClicks || !event.isTrusted || !event.detail) return
      const at = context.now()
      const { clientX: x, clientY: y } = event
      recent = recent.filter(([cx, cy, cat]) => at - cat < RAGE_WINDOW_MS && Math.hypot(cx - x, cy - y) <= RAGE_RADIUS_PX)
      // A burst goes on while each click joins one before it (clicking at about 3 a second keeps three
      // in the window at every click); one that joins none (a pause, another place) begins the next.
      if (!recent.length) raged = false
      if (recent.push([x, y, at]) == RAGE_CLICKS && !raged) {
        raged = true
        context.customEvent('$rageclick', { ...properties, clicks: RAGE_CLICKS })
      }
    },
    true,
  )]
}
