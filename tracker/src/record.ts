import { record } from '@rrweb/record'
import type { Redaction } from './redaction'
import { FULL_SNAPSHOT, META, type RecordedEvent } from './replay'
import { withoutCredentials, withoutQuery } from './urls'

/** rrweb's numbers (its enums are not imported: that would bundle their names), inlined where used. */
const enum Rrweb {
  Incremental = 3,
  Mutation = 0, // IncrementalSource.Mutation
  Interaction = 2, // IncrementalSource.MouseInteraction
  Input = 5, // IncrementalSource.Input
  Text = 3, // NodeType.Text
}
/** The incremental sources a person causes: mouse move, interaction, scroll, input, touch, media, drag, selection. */
const USER_SOURCES = [1, 2, 3, 5, 6, 7, 12, 14]

/**
 * Attributes that hold text a person reads (or hears, or feels in braille), or a control's value, or
 * repeat an element's text in another form (a time's `datetime`), or name a file saved (a link's
 * `download`: "invoice-jane-doe.pdf"); an SVG link's `xlink:title` is its tooltip. rrweb's mask
 * functions see text nodes and most input values only: not these, nor the values of buttons,
 * checkboxes, radios and options.
 */
const TEXT_ATTRIBUTES = /^(value|placeholder|(xlink:)?title|alt(text)?|label|abbr|datetime|download|srcdoc|aria-((braille)?(label|roledescription)|description|placeholder|value(text|now)))$/

/**
 * Attributes that say which choice a control shows (checked, selected, pressed), or which option a
 * list's focus is on (`aria-activedescendant`, the chosen one as a person moves through a listbox or a
 * combobox's list): of a masked control, none is recorded.
 */
const CHOSEN = /^(aria-)?(pressed|checked|selected|activedescendant)$/

/**
 * Controls a choice is made with, where the keyboard moves the choice and the focus (and a custom
 * widget's `tabindex` 0) together: arrow keys in a radio group, a listbox, a tablist; and clicks them
 * with no pointer there (the radio the arrows check, the box Space toggles). Of a masked one, the
 * focus, the tabindex and such a click would say which is chosen.
 */
const CHOICE = '[type=radio],[type=checkbox],[role=radio],[role=menuitemradio],[role=option],[role=tab]'

/**
 * Values a page keeps out of sight, often a CSRF token or a record's id: a hidden input's value and
 * the content of a token's `<meta>`; and a file input's value (`C:\fakepath\` and the chosen file's
 * name), which no player can set. A replay shows nothing of them, so they are masked in every mode.
 */
const outOfSight = (el: Element | null, name: string) =>
  (name === 'value' && el?.localName === 'input' && /hidden|file/.test((el as HTMLInputElement).type)) ||
  (name === 'content' && el?.localName === 'meta' && /csrf|xsrf|token|nonce|secret/i.test(el.getAttribute('name') ?? el.getAttribute('property') ?? ''))

/**
 * Whether attribute `name` of a `tag` element says where a link or a form leads. The player never
 * follows these, so they go as the tracker's clicked links and form actions do: absolute, without
 * query and fragment, and of a URL without a host (`mailto:`, `tel:`, `data:`) only the scheme.
 */
const leadsAway = (tag: string | undefined, name: string) => name === 'formaction' || (name === 'action' && tag === 'form') || (/href$/.test(name) && (tag === 'a' || tag === 'area'))

/**
 * Whether attribute `name` holds the URL of a page, not of something the player loads: a link's but a
 * style sheet's (canonical, alternate, prev, next), a meta's (og:url, twitter:url), and any that names
 * the page itself (`<img src="#">`, a placeholder; `<iframe src="#">`), which rrweb writes absolute, as
 * the page's URL, fragment aside (the base URL: a srcdoc frame's is its page's). A page's URL holds
 * what a form sent by GET put there, so in privacy-first mode these go as page URLs do.
 */
const namesPage = (el: Element | null, name: string, value: string) =>
  (name === 'href' && el?.localName === 'link' && !/stylesheet/i.test(el.getAttribute('rel') as string) /* none: "null" */) ||
  (name === 'content' && el?.localName === 'meta' && /^(https?:|\/)/.test(value)) ||
  value.split('#')[0] == el?.baseURI.split('#')[0]

/**
 * A URL in a string of the recording lies between spaces, quotes and parentheses (CSS quotes URLs or
 * wraps them in url()); a comma ending one separates srcset's candidates. A data: URL is content (an
 * image), not an address. (A word without `=` or `@` holds no credential: withoutCredentials leaves it.)
 */
const scrubWord = (word: string) => word.replace(/^(?!data:).*?(?=,*$)/, withoutCredentials)

/** Most strings hold no credential: one look at the whole string says so, and it stays as it is. */
const scrubbed = (text: string) => (/[=@]/.test(text) && withoutCredentials(text) !== text ? text.replace(/[^\s'"()]+/g, scrubWord) : text)

/**
 * An event's data, in place, with every URL in its strings without credentials, the rule of every URL
 * the tracker sends: attribute values, inline styles and style sheets (a snapshot's, a rule inserted
 * later), text. Other URLs stay as they are, so images and style sheets load in the player.
 */
function scrub(value: Record<string, unknown>): void {
  // An array's keys are its indexes.
  for (const key of Object.keys(value)) {
    const item = value[key]
    if (typeof item === 'string') value[key] = scrubbed(item)
    else if (item && typeof item === 'object') scrub(item as Record<string, unknown>)
  }
}

interface Serialized {
  id: number
  type?: number
  tagName?: string
  textContent?: string
  attributes?: Record<string, unknown>
  childNodes?: Serialized[]
}

/**
 * A full snapshot every 10 minutes keeps long replays seekable. Not exported: the script-tag bundle
 * lists every export of a module it loads on demand.
 */
const CHECKOUT_MS = 10 * 60 * 1000

export interface Recording {
  stop(): void
  /** A new full snapshot now (new session, changed redaction). */
  snapshot(): void
}

/**
 * rrweb recording with every text and input value passed through the redaction rules. Every input
 * type and every text node is offered to the mask functions, which decide per element (text right in
 * a shadow root, which rrweb skips, by the emit hook); comments are not recorded. A meta event always
 * precedes a full snapshot, so that is where changed selectors take effect.
 */
export function startRecording(redaction: Redaction, emit: (event: RecordedEvent, activity: boolean) => void): Recording {
  const hide = (text: string) => text.replace(/\S/g, '*')
  // A password field that a "show password" button made a text field is still one. rrweb marks it
  // (and asks maskInputFn about it as a password); the selectors, which look at its type, do not see it.
  // A masked select's value is none at all: stars as long as the chosen option's value would tell
  // which it is (the options' values are recorded, masked, each as long as it is).
  const mask = (text: string, el: HTMLElement | null) => (redaction.masked(el) || el?.hasAttribute('data-rr-is-password') ? (el?.localName == 'select' ? '' : hide(text)) : text)
  const element = (id: number) => record.mirror.getNode(id) as HTMLElement | null
  /** The element a mouse, pen or finger was last lifted from, until the click that follows it. */
  let released: number | undefined
  const maskAttributes = (attributes: Record<string, unknown> | undefined, id: number, el = element(id), tag = el?.localName) => {
    for (const name in attributes) {
      // Which choice of a masked control is made: an option's `selected` (rrweb leaves it out of
      // snapshots, not out of a change the page's script makes, nor its removal, null), a checkbox's or
      // radio's `checked` (rrweb records the state in snapshots), and a custom widget's ARIA state; and
      // of a choice, its `tabindex`, which a custom radio group or tablist makes 0 on the chosen one only.
      if ((CHOSEN.test(name) || (name == 'tabindex' && el?.matches?.(CHOICE))) && redaction.masked(el)) delete attributes[name]
      const value = attributes[name]
      if (typeof value !== 'string') continue
      if (outOfSight(el, name)) attributes[name] = hide(value)
      else if (TEXT_ATTRIBUTES.test(name)) attributes[name] = mask(value, el)
      else if (leadsAway(tag, name)) attributes[name] = withoutQuery(value, el?.baseURI ?? document.baseURI)
      else if (redaction.privacyFirst && namesPage(el, name, value)) attributes[name] = redaction.pageUrl(value)
    }
  }
  // Text right inside a shadow root has no parent element: rrweb offers it to maskTextFn with none
  // (or, once the page has changed, not at all). Its shadow host's rules apply, to the node's text.
  // (`node` and `parent` are locals, parameters for t.js's size budget: callers pass text and id only.)
  const maskBare = (text: string, id: number, node = element(id), parent = node?.parentNode as ShadowRoot | null | undefined) =>
    parent?.nodeType === 11 ? mask(node!.textContent!, parent.host as HTMLElement) : text
  const maskTree = (node: Serialized): void => {
    maskAttributes(node.attributes, node.id, element(node.id), node.tagName)
    if (node.type === Rrweb.Text) node.textContent = maskBare(node.textContent!, node.id)
    node.childNodes?.forEach(maskTree)
  }
  const stop = record({
    emit(event: RecordedEvent) {
      // The same rules for text in attributes, and URLs, on the serialized copy (the page is not touched).
      const data = event.data as { href?: string; source?: number; type?: number; node?: Serialized; adds?: { node: Serialized }[]; attributes?: Serialized[]; texts?: { id: number; value: string }[]; id: number; text?: string }
      scrub(data as Record<string, unknown>)
      if (event.type === META) {
        // The page's URL, which the service keeps as the session's entry URL, too.
        data.href = redaction.pageUrl(data.href!)
        redaction.apply()
      } else if (event.type === FULL_SNAPSHOT) maskTree(data.node!)
      else if (event.type === Rrweb.Incremental)
        if (data.source === Rrweb.Mutation) {
          data.adds!.forEach((add) => maskTree(add.node))
          // A change left with no attribute would still say which option it was.
          data.attributes = data.attributes!.filter((change) => (maskAttributes(change.attributes, change.id), Object.keys(change.attributes!).length))
          data.texts!.forEach((change) => (change.value = maskBare(change.value, change.id)))
        } else if (data.source === Rrweb.Input) {
          const el = element(data.id)
          // Which box or radio button of a masked group is checked: the event's element itself tells.
          if (/checkbox|radio/.test((el as HTMLInputElement)?.type) && redaction.masked(el)) return
          data.text = outOfSight(el, 'value') ? hide(data.text!) : mask(data.text!, el)
        } else if (data.source === Rrweb.Interaction) {
          // rrweb's types: 0 MouseUp (a pen's too), 9 TouchEnd, 2 Click, 5 Focus, 6 Blur. Of a masked
          // choice, its focus is not recorded, nor a click no press released there made (the keyboard's,
          // a label's passed on); a person's press and release are, so where they click still shows.
          const type = data.type
          const pressed = released === data.id
          if (!type || type == 9) released = data.id
          else if (type == 2) released = undefined
          if (((type == 2 && !pressed) || type == 5 || type == 6) && element(data.id)?.matches?.(CHOICE) && redaction.masked(element(data.id))) return
        }
      // A person did this (DOM mutations and style changes happen on their own): it keeps the session alive.
      emit(event, event.type === Rrweb.Incremental && USER_SOURCES.includes(data.source!))
    },
    maskAllInputs: true,
    maskTextSelector: '*',
    maskTextFn: mask,
    maskInputFn: mask,
    checkoutEveryNms: CHECKOUT_MS,
    // Comments are never shown, and may hold anything the page's author left there. Nor are a page's
    // description, keywords, author and social metas (og:title, twitter:description, product:price):
    // they repeat the title and text that privacy-first masks, and some name the person the page is of.
    slimDOMOptions: { comment: true, headMetaDescKeywords: true, headMetaSocial: true, headMetaAuthorship: true },
    // Canvases are not recorded: rrweb's default (recordCanvas), and the build leaves its canvas code out.
  })
  return {
    stop: () => stop?.(),
    snapshot() {
      // In a page still loading, rrweb waits for DOMContentLoaded to record, and refuses (throws)
      // until then; the snapshot it takes when it starts is the one asked for.
      try {
        record.takeFullSnapshot(true)
      } catch {}
    },
  }
}
