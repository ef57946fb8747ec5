/**
 * A replay body read in one pass over its bytes, without building its events. A 1 MB chunk is
 * thousands of rrweb events whose `data` the service never looks into: it needs the fields beside
 * `events`, and of each event its place in the body, `type`, `timestamp` and whether it has `data`.
 * `JSON.parse` would decode the body into a string and build every object of every event, several
 * times the body's size in garbage per chunk, only for the chunk to be stored as the bytes it came
 * as. This checks the whole body against the JSON grammar as `JSON.parse` would (a body it refuses
 * is refused), and builds only the fields beside `events`, with `JSON.parse`, from their own bytes.
 */

const TAB = 0x09
const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const QUOTE = 0x22
const COMMA = 0x2c
const MINUS = 0x2d
const DOT = 0x2e
const ZERO = 0x30
const NINE = 0x39
const COLON = 0x3a
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

export class JsonSyntaxError extends Error {}

const utf8 = new TextDecoder()
const text = (b: Uint8Array, start: number, end: number) => utf8.decode(b.subarray(start, end))

/**
 * A scanned `events` array: where each item lies in the body and the two numbers of it that the
 * service reads. Offsets are kept for the first `limit` items given to `scanReplayBody`.
 */
export class ScannedEvents {
  constructor(
    /** The body the offsets point into. */
    readonly bytes: Uint8Array,
    /** Each top-level member of the body: its name, and where it lies (name to end of value). */
    readonly members: readonly Member[],
    /** Items in the array. */
    readonly count: number,
    readonly start: Uint32Array,
    readonly end: Uint32Array,
    /** Item `k`'s `type` and `timestamp` when they are JSON numbers, else NaN. */
    readonly type: Float64Array,
    readonly timestamp: Float64Array,
    /** Item `k` is an object (IS_OBJECT) and has a `data` member (HAS_DATA). */
    readonly flags: Uint8Array,
  ) {}

  /** Item `k`, parsed. */
  item(k: number): unknown {
    return JSON.parse(text(this.bytes, this.start[k], this.end[k]))
  }
}

export interface Member {
  key: string
  start: number
  end: number
}

export const IS_OBJECT = 1
export const HAS_DATA = 2

export interface ScannedBody {
  /** Every top-level member but an `events` array, as `JSON.parse` makes them. */
  fields: Record<string, unknown>
  /** The `events` array (the last `events`, as `JSON.parse` would keep), when it is one. */
  events: ScannedEvents | undefined
}

const fail = (at: number): never => {
  throw new JsonSyntaxError(`JSON syntax error at byte ${at}`)
}

function skipSpace(b: Uint8Array, i: number): number {
  for (let c = b[i]; c === SPACE || c === LF || c === CR || c === TAB; c = b[++i]);
  return i
}

/** Bytes a string may hold as they are: not a quote, a backslash or a control character. */
const PLAIN = new Uint8Array(256).map((_, c) => (c >= SPACE && c !== QUOTE && c !== BACKSLASH ? 1 : 0))

function skipString(b: Uint8Array, i: number): number {
  if (b[i] !== QUOTE) fail(i)
  i++
  for (;;) {
    while (PLAIN[b[i]] === 1) i++
    const c = b[i]
    if (c === QUOTE) return i + 1
    if (c !== BACKSLASH) return fail(i)
    const e = b[i + 1]
    if (e === 0x75 /* u */) {
      for (let k = i + 2; k < i + 6; k++) if (!isHex(b[k])) fail(k)
      i += 6
    } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) i += 2
    else fail(i)
  }
}

const isHex = (c: number) => (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
const isDigit = (c: number) => c >= ZERO && c <= NINE

/** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
function skipNumber(b: Uint8Array, i: number): number {
  if (b[i] === MINUS) i++
  if (b[i] === ZERO) i++
  else if (isDigit(b[i])) while (isDigit(b[++i]));
  else fail(i)
  if (b[i] === DOT) {
    if (!isDigit(b[++i])) fail(i)
    while (isDigit(b[++i]));
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    if (b[++i] === 0x2b || b[i] === MINUS) i++
    if (!isDigit(b[i])) fail(i)
    while (isDigit(b[++i]));
  }
  return i
}

const TRUE = [0x74, 0x72, 0x75, 0x65]
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65]
const NULL = [0x6e, 0x75, 0x6c, 0x6c]

function skipLiteral(b: Uint8Array, i: number, literal: number[]): number {
  for (let k = 0; k < literal.length; k++) if (b[i + k] !== literal[k]) fail(i + k)
  return i + literal.length
}

function skipScalar(b: Uint8Array, i: number): number {
  const c = b[i]
  if (c === QUOTE) return skipString(b, i)
  if (c === MINUS || isDigit(c)) return skipNumber(b, i)
  if (c === 0x74) return skipLiteral(b, i, TRUE)
  if (c === 0x66) return skipLiteral(b, i, FALSE)
  if (c === 0x6e) return skipLiteral(b, i, NULL)
  return fail(i)
}

/** Open containers of the value being skipped, innermost last (1 for an object): one stack, as nothing here re-enters. */
let open = new Uint8Array(64)

/**
 * Skips one value of any depth, without recursion (a body may nest deeper than the stack). The hot
 * loop of the scan: whitespace is looked for only where a byte at or below a space says there is some.
 */
function skipValue(b: Uint8Array, i: number): number {
  let c = b[i]
  if (c !== OPEN_OBJECT && c !== OPEN_ARRAY) return skipScalar(b, i)
  let depth = 0
  for (;;) {
    // A value starts at i (c = b[i]).
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const object = c === OPEN_OBJECT
      c = b[++i]
      if (c <= SPACE) c = b[(i = skipSpace(b, i))]
      if (c === (object ? CLOSE_OBJECT : CLOSE_ARRAY)) i++
      else {
        if (depth === open.length) {
          const deeper = new Uint8Array(depth * 2)
          deeper.set(open)
          open = deeper
        }
        open[depth++] = object ? 1 : 0
        if (object) i = skipMemberName(b, i)
        c = b[i]
        continue
      }
    } else i = c === QUOTE ? skipString(b, i) : skipScalar(b, i)
    // A value ended: close what ends here, then find the next value.
    for (;;) {
      if (depth === 0) return i
      c = b[i]
      if (c <= SPACE) c = b[(i = skipSpace(b, i))]
      const object = open[depth - 1] === 1
      if (c === COMMA) {
        c = b[++i]
        if (c <= SPACE) c = b[(i = skipSpace(b, i))]
        if (object) c = b[(i = skipMemberName(b, i))]
        break
      }
      if (c !== (object ? CLOSE_OBJECT : CLOSE_ARRAY)) fail(i)
      depth--
      i++
    }
  }
}

/** Skips `"name" :` and the space after it. */
function skipMemberName(b: Uint8Array, i: number): number {
  i = skipString(b, i)
  if (b[i] !== COLON) {
    i = skipSpace(b, i)
    if (b[i] !== COLON) fail(i)
  }
  return b[i + 1] <= SPACE ? skipSpace(b, i + 1) : i + 1
}

/** The string a member name (quotes included) stands for; plain ASCII names without escapes are read as they are. */
function nameOf(b: Uint8Array, start: number, end: number): string {
  for (let k = start + 1; k < end - 1; k++) if (b[k] === BACKSLASH || b[k] >= 0x80) return JSON.parse(text(b, start, end))
  return text(b, start + 1, end - 1)
}

/** Whether the member name at `start..end` (quotes included) is `name` (ASCII). */
function nameIs(b: Uint8Array, start: number, end: number, name: string): boolean {
  if (end - start === name.length + 2) {
    for (let k = 0; k < name.length; k++) if (b[start + 1 + k] !== name.charCodeAt(k)) return false
    return true
  }
  // Only a name with escapes in it can spell `name` at another length.
  return b.subarray(start, end).includes(BACKSLASH) && nameOf(b, start, end) === name
}

/** A number token's value: integers of up to 15 digits are added up directly, the rest go through `Number`. */
function numberAt(b: Uint8Array, start: number, end: number): number {
  let k = start
  const negative = b[k] === MINUS
  if (negative) k++
  if (end - k > 15) return Number(text(b, start, end))
  let value = 0
  for (; k < end; k++) {
    const c = b[k]
    if (!isDigit(c)) return Number(text(b, start, end))
    value = value * 10 + (c - ZERO)
  }
  return negative ? -value : value
}

class EventsBuilder {
  count = 0
  start = new Uint32Array(256)
  end = new Uint32Array(256)
  type = new Float64Array(256)
  timestamp = new Float64Array(256)
  flags = new Uint8Array(256)

  constructor(readonly limit: number) {}

  add(start: number, end: number, type: number, timestamp: number, flags: number): void {
    const k = this.count++
    if (k >= this.limit) return
    if (k === this.start.length) this.grow()
    this.start[k] = start
    this.end[k] = end
    this.type[k] = type
    this.timestamp[k] = timestamp
    this.flags[k] = flags
  }

  private grow(): void {
    const size = this.start.length * 2
    const grown = <T extends Uint32Array | Float64Array | Uint8Array>(a: T, make: new (n: number) => T) => {
      const next = new make(size)
      next.set(a)
      return next
    }
    this.start = grown(this.start, Uint32Array)
    this.end = grown(this.end, Uint32Array)
    this.type = grown(this.type, Float64Array)
    this.timestamp = grown(this.timestamp, Float64Array)
    this.flags = grown(this.flags, Uint8Array)
  }
}

/** One item of `events`: an object's `type`, `timestamp` and `data` are looked at, anything else only skipped. */
function scanItem(b: Uint8Array, i: number, into: EventsBuilder): number {
  const start = i
  if (b[i] !== OPEN_OBJECT) {
    i = skipValue(b, i)
    into.add(start, i, NaN, NaN, 0)
    return i
  }
  let type = NaN
  let timestamp = NaN
  let flags = IS_OBJECT
  i = skipSpace(b, i + 1)
  if (b[i] !== CLOSE_OBJECT) {
    for (;;) {
      const nameStart = i
      const nameEnd = skipString(b, i)
      i = skipSpace(b, nameEnd)
      if (b[i] !== COLON) fail(i)
      const valueStart = (i = skipSpace(b, i + 1))
      i = skipValue(b, i)
      // A repeated name counts by its last value, as in JSON.parse.
      const numeric = b[valueStart] === MINUS || isDigit(b[valueStart])
      if (nameIs(b, nameStart, nameEnd, 'type')) type = numeric ? numberAt(b, valueStart, i) : NaN
      else if (nameIs(b, nameStart, nameEnd, 'timestamp')) timestamp = numeric ? numberAt(b, valueStart, i) : NaN
      else if (nameIs(b, nameStart, nameEnd, 'data')) flags |= HAS_DATA
      i = skipSpace(b, i)
      if (b[i] === COMMA) i = skipSpace(b, i + 1)
      else if (b[i] === CLOSE_OBJECT) break
      else fail(i)
    }
  }
  into.add(start, i + 1, type, timestamp, flags)
  return i + 1
}

function scanEvents(b: Uint8Array, i: number, into: EventsBuilder): number {
  i = skipSpace(b, i + 1)
  if (b[i] === CLOSE_ARRAY) return i + 1
  for (;;) {
    i = skipSpace(b, scanItem(b, i, into))
    if (b[i] === COMMA) i = skipSpace(b, i + 1)
    else if (b[i] === CLOSE_ARRAY) return i + 1
    else fail(i)
  }
}

const BOM = [0xef, 0xbb, 0xbf]

/**
 * Scans a body that is a JSON object; null when it is JSON of another kind (for `JSON.parse`).
 * Throws `JsonSyntaxError` when it is not JSON. Offsets of at most `limit` items are kept; the
 * rest are checked and counted only.
 */
export function scanReplayBody(b: Uint8Array, limit: number): ScannedBody | null {
  // TextDecoder drops a byte order mark before JSON.parse sees the text; so does this.
  let i = skipSpace(b, b[0] === BOM[0] && b[1] === BOM[1] && b[2] === BOM[2] ? 3 : 0)
  if (b[i] !== OPEN_OBJECT) {
    skipSpace(b, skipValue(b, i)) === b.length || fail(i)
    return null
  }
  const members: Member[] = []
  let events: EventsBuilder | undefined
  i = skipSpace(b, i + 1)
  if (b[i] !== CLOSE_OBJECT) {
    for (;;) {
      const start = i
      const nameEnd = skipString(b, i)
      const key = nameOf(b, start, nameEnd)
      i = skipSpace(b, nameEnd)
      if (b[i] !== COLON) fail(i)
      i = skipSpace(b, i + 1)
      if (key === 'events' && b[i] === OPEN_ARRAY) i = scanEvents(b, i, (events = new EventsBuilder(limit)))
      else {
        if (key === 'events') events = undefined
        i = skipValue(b, i)
      }
      members.push({ key, start, end: i })
      i = skipSpace(b, i)
      if (b[i] === COMMA) i = skipSpace(b, i + 1)
      else if (b[i] === CLOSE_OBJECT) break
      else fail(i)
    }
  }
  if (skipSpace(b, i + 1) !== b.length) fail(i + 1)
  // The other members, parsed from their own bytes (objects as JSON.parse makes them, `__proto__` included).
  const others = members.filter((m) => !(m.key === 'events' && events))
  const fields = JSON.parse(`{${others.map((m) => text(b, m.start, m.end)).join(',')}}`) as Record<string, unknown>
  return { fields, events: events && new ScannedEvents(b, members, events.count, events.start, events.end, events.type, events.timestamp, events.flags) }
}
