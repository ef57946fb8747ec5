/**
 * Synthetic rrweb recordings shaped like a real one: a full snapshot of a page (nested elements with
 * classes, attributes and text), then incremental snapshots (mouse moves, scrolls, inputs, DOM
 * mutations). A seeded generator makes every chunk different, as real chunks are, so that the server's
 * content-hash dedupe does not turn the benchmark into a no-op.
 */
export function rng(seed: number): () => number {
  // mulberry32
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const TAGS = ['div', 'span', 'a', 'li', 'p', 'button', 'img', 'section', 'h2', 'input', 'label', 'ul', 'nav', 'svg', 'path']
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ra', 'to', 'shi', 'va', 'de', 'po', 'qu', 'en', 'str', 'ex', 'bi', 'ol', 'ar', 'un', 'te', 'ms']

function vocabulary(random: () => number, size: number): string[] {
  return Array.from({ length: size }, () => {
    const n = 1 + Math.floor(random() * 4)
    return Array.from({ length: n }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join('')
  })
}

export interface RecordingOptions {
  seed: number
  /** Stop adding events once the JSON of the events is about this long. */
  targetBytes: number
  startAt?: number
}

/** Word `i` of a vocabulary is picked with probability ~1/i, as words of natural language are (Zipf). */
function zipf(random: () => number, size: number): () => number {
  const harmonic = Array.from({ length: size }, (_, i) => 1 / (i + 1))
  const total = harmonic.reduce((a, b) => a + b, 0)
  const cumulative: number[] = []
  harmonic.reduce((sum, p, i) => (cumulative[i] = sum + p / total), 0)
  return () => {
    const r = random()
    let lo = 0
    let hi = size - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid] < r) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

const CSS_PROPERTIES = ['display: flex', 'margin: 0 auto', 'padding: 8px 16px', 'color: #1f2937', 'font-size: 14px', 'line-height: 1.5',
  'border-radius: 6px', 'background-color: #ffffff', 'align-items: center', 'justify-content: space-between', 'gap: 12px',
  'font-weight: 600', 'border: 1px solid #e5e7eb', 'position: relative', 'width: 100%', 'transition: opacity 0.2s ease-in-out']

/** One chunk of a recording: a meta event and a full snapshot, then incremental events up to the size. */
export function recordingChunk({ seed, targetBytes, startAt = Date.now() - 60_000 }: RecordingOptions): unknown[] {
  const random = rng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]
  const words = vocabulary(random, 2000)
  const word = zipf(random, words.length)
  const classes = vocabulary(random, 150).map((w) => `${w}-${pick(['wrap', 'item', 'btn', 'title', 'row', 'col', 'card'])}`)
  const sentence = (n: number) => Array.from({ length: n }, () => words[word()]).join(' ')
  let id = 1
  let at = startAt
  const node = (depth: number): unknown => {
    if (depth > 6 || random() < 0.25) return { type: 3, textContent: sentence(1 + Math.floor(random() * 12)), id: id++ }
    const tagName = pick(TAGS)
    const attributes: Record<string, string> = { class: `${pick(classes)} ${pick(classes)}` }
    if (tagName === 'a') attributes.href = `/${words[word()]}/${words[word()]}?ref=${Math.floor(random() * 1e6)}`
    if (tagName === 'img') attributes.src = `https://cdn.example.com/${words[word()]}/${Math.floor(random() * 1e8).toString(36)}.webp`
    if (random() < 0.2) attributes['data-testid'] = `${words[word()]}-${Math.floor(random() * 1000)}`
    const children = depth < 3 ? 2 + Math.floor(random() * 6) : Math.floor(random() * 4)
    return { type: 2, tagName, attributes, childNodes: Array.from({ length: children }, () => node(depth + 1)), id: id++ }
  }
  // Pages ship their CSS; rrweb inlines it into the snapshot as `_cssText`.
  const css = classes.map((c) => `.${c} { ${Array.from({ length: 3 + Math.floor(random() * 5) }, () => pick(CSS_PROPERTIES)).join('; ')}; }`).join('\n')
  const head = { type: 2, tagName: 'head', attributes: {}, childNodes: [{ type: 2, tagName: 'style', attributes: { _cssText: css }, childNodes: [], id: id++ }], id: id++ }

  const events: unknown[] = [
    { type: 4, data: { href: `https://shop.example.com/${words[word()]}`, width: 1440, height: 900 }, timestamp: at },
    { type: 2, data: { node: { type: 0, childNodes: [head, ...Array.from({ length: 8 }, () => node(0))], id: id++ }, initialOffset: { left: 0, top: 0 } }, timestamp: (at += 15) },
  ]
  // The pointer moves in paths and a page changes the same few nodes again and again.
  let x = 700
  let y = 400
  let scroll = 0
  const hot = Array.from({ length: 40 }, () => 1 + Math.floor(random() * id))
  const hotId = () => hot[Math.floor(random() * hot.length)]
  let bytes = JSON.stringify(events).length
  while (bytes < targetBytes) {
    const kind = random()
    let event: unknown
    if (kind < 0.5) {
      const positions = Array.from({ length: 1 + Math.floor(random() * 10) }, (_, i) => {
        x = Math.max(0, Math.min(1440, x + Math.floor(random() * 41) - 20))
        y = Math.max(0, Math.min(900, y + Math.floor(random() * 41) - 20))
        return { x, y, id: hotId(), timeOffset: -i * 16 }
      })
      event = { type: 3, data: { source: 1, positions }, timestamp: (at += 50 + Math.floor(random() * 200)) }
    } else if (kind < 0.65) {
      scroll = Math.max(0, scroll + Math.floor(random() * 400) - 150)
      event = { type: 3, data: { source: 3, id: 1, x: 0, y: scroll }, timestamp: (at += 30 + Math.floor(random() * 300)) }
    } else if (kind < 0.72) {
      event = { type: 3, data: { source: 5, text: sentence(2), isChecked: false, id: hotId() }, timestamp: (at += 100 + Math.floor(random() * 900)) }
    } else {
      event = {
        type: 3,
        data: {
          source: 0,
          texts: random() < 0.5 ? [{ id: hotId(), value: sentence(4) }] : [],
          attributes: [{ id: hotId(), attributes: { class: `${pick(classes)} ${random() < 0.5 ? 'is-active' : 'is-hidden'}` } }],
          removes: random() < 0.3 ? [{ parentId: hotId(), id: hotId() }] : [],
          adds: random() < 0.3 ? [{ parentId: hotId(), nextId: null, node: node(4) }] : [],
        },
        timestamp: (at += 20 + Math.floor(random() * 400)),
      }
    }
    events.push(event)
    bytes += JSON.stringify(event).length + 1
  }
  return events
}
