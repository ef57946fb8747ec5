/**
 * The name of the function that encloses a position in JavaScript or TypeScript source, for
 * symbolicated frames: a minifier renames `validateCoupon` to `e`, and many bundlers (Bun among
 * them) write source maps without `names`, but the map does lead back to a position in the
 * original source, and that source says which function the position is in.
 *
 * A light scan, not a parser: it skips comments, strings, template literals and regular
 * expressions, keeps the text before each `{` that is still open at the position, and reads those
 * heads from the innermost out until one declares a function. Returns '' for an anonymous function
 * or top-level code, null when the position is outside the source.
 */
export function enclosingFunctionName(source: string, line: number, column: number): string | null {
  return functionScopes(source).nameAt(line, column)
}

export interface FunctionScopes {
  /** As `enclosingFunctionName`, for a position of the source the scopes were made of. */
  nameAt(line: number, column: number): string | null
}

/**
 * The blocks of a source, found in one pass, for asking about many positions: each question then
 * costs a binary search and a walk out through the blocks around it, not a scan of the source up
 * to it (which, for a frame deep in a large source, took a fifth of a second, once per frame).
 */
export function functionScopes(source: string): FunctionScopes {
  const lineStarts = lineStartsOf(source)
  const blocks = blocksOf(source)
  /**
   * The name each block's position gets: its own function's, else the nearest one around it, else ''.
   * Kept once found, for every block on the way out: an uploaded source may nest blocks that
   * declare no function a hundred thousand deep, and a walk out through all of them per frame took
   * seconds a report.
   */
  const resolved = new Map<number, string>()
  const resolve = (innermost: number): string => {
    const way: number[] = []
    let name = ''
    for (let block = innermost; block >= 0; block = blocks.parent[block]) {
      const known = resolved.get(block)
      if (known !== undefined) {
        name = known
        break
      }
      way.push(block)
      const own = functionNameOfHead(source.slice(blocks.headStart[block], blocks.start[block]))
      if (own !== null) {
        name = own
        break
      }
    }
    for (const block of way) resolved.set(block, name)
    return name
  }
  return {
    nameAt(line, column) {
      const index = Math.max(line, 1) - 1
      if (index >= lineStarts.length) return null
      const lineStart = lineStarts[index]
      const lineEnd = index + 1 < lineStarts.length ? lineStarts[index + 1] - 1 : source.length
      const offset = lineStart + Math.min(Math.max(column, 0), lineEnd - lineStart)
      return resolve(blocks.innermostOpenAt(offset))
    },
  }
}

function lineStartsOf(source: string): number[] {
  const starts = [0]
  for (let i = source.indexOf('\n'); i >= 0; i = source.indexOf('\n', i + 1)) starts.push(i + 1)
  return starts
}

/** A growable column of block positions. */
class Column {
  values = new Int32Array(64)
  length = 0
  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Int32Array(this.values.length * 2)
      grown.set(this.values)
      this.values = grown
    }
    this.values[this.length++] = value
  }
}

/** Template literal `${`: its `}` returns to the template, not to code. */
const TEMPLATE = -1
/** A block whose head cannot declare a function (every function head has a `)` or a `=>`): not kept. */
const NOT_A_FUNCTION = -2
/**
 * An object, a destructuring pattern or an object type: a `{` that does not follow what ends a
 * function's head (a word, `)`, `=>`, `]`, `}`, a string literal type), or that follows a type
 * operator. It is part of the head around it, as in
 * `function f({ id }: { id: string }): Promise<{ ok: boolean }> {`, so it does not end that head.
 */
const IN_HEAD = -3
const BEFORE_BODY = new Set(['w', ')', '>', ']', '}', "'", '"'])
const TYPE_OPERATOR_BEFORE = /(?:^|[^\w$])(?:readonly|keyof|typeof|extends|as|satisfies)$/
/** After these, a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^'])
const KEYWORDS_BEFORE_REGEX = /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/
/** At most this much of the text before a `{` is read as its head. */
const HEAD_CHARS = 400

/**
 * The `{ ... }` blocks of the source that may be functions, in the order they open: where each
 * opens, where its head starts (after the last `{`, `}` or `;`), and the kept block around it (-1
 * at top level); and which is innermost where. A block is open at an offset it follows and its `}`
 * does not. Other blocks are left out, which keeps the index small.
 */
function blocksOf(source: string) {
  const start = new Column()
  const headStart = new Column()
  const parent = new Column()
  // Where the innermost kept block changes (the offset from which on it holds) and which it then is.
  const changedAt = new Column()
  const changedTo = new Column()
  // Open blocks (kept ones by index), and `${` markers of template literals between them.
  const open: number[] = []
  const openBlocks: number[] = []
  let segmentStart = 0
  let lastSignificant = ''
  let i = 0
  const skipTemplate = (from: number): number => {
    // From inside a template literal to past its end, or to just past a `${` (pushing a marker).
    let j = from
    while (j < source.length) {
      const c = source[j]
      if (c === '\\') j += 2
      else if (c === '`') return j + 1
      else if (c === '$' && source[j + 1] === '{') {
        open.push(TEMPLATE)
        return j + 2
      } else j++
    }
    return j
  }
  while (i < source.length) {
    const c = source[i]
    const next = source[i + 1]
    if (c === '/' && next === '/') {
      const lineEnd = source.indexOf('\n', i)
      i = lineEnd < 0 ? source.length : lineEnd
      continue
    }
    if (c === '/' && next === '*') {
      const commentEnd = source.indexOf('*/', i + 2)
      i = commentEnd < 0 ? source.length : commentEnd + 2
      continue
    }
    if (c === '"' || c === "'") {
      i = skipQuoted(source, i, c)
      lastSignificant = c
      continue
    }
    if (c === '`') {
      i = skipTemplate(i + 1)
      lastSignificant = '`'
      continue
    }
    if (c === '/' && (BEFORE_REGEX.has(lastSignificant) || KEYWORDS_BEFORE_REGEX.test(source.slice(Math.max(0, i - 12), i).trimEnd()))) {
      i = skipRegex(source, i)
      lastSignificant = '/'
      continue
    }
    const inHead = c === '{' && (!BEFORE_BODY.has(lastSignificant) || TYPE_OPERATOR_BEFORE.test(source.slice(Math.max(0, i - 12), i).trimEnd()))
    if (inHead) {
      open.push(IN_HEAD)
    } else if (c === '{') {
      const head = Math.max(segmentStart, i - HEAD_CHARS)
      const text = source.slice(head, i)
      if (text.includes(')') || text.includes('=>')) {
        const block = start.length
        start.push(i)
        headStart.push(head)
        parent.push(openBlocks.at(-1) ?? -1)
        open.push(block)
        openBlocks.push(block)
        changedAt.push(i + 1)
        changedTo.push(block)
      } else {
        open.push(NOT_A_FUNCTION)
      }
      segmentStart = i + 1
    } else if (c === '}') {
      const closed = open.pop()
      if (closed !== IN_HEAD) segmentStart = i + 1
      if (closed === TEMPLATE) {
        i = skipTemplate(i + 1)
        lastSignificant = '`'
        continue
      }
      if (closed !== undefined && closed >= 0) {
        openBlocks.pop()
        changedAt.push(i + 1)
        changedTo.push(openBlocks.at(-1) ?? -1)
      }
    } else if (c === ';' && open.at(-1) !== IN_HEAD) {
      segmentStart = i + 1
    }
    if (!/\s/.test(c)) lastSignificant = /[\w$]/.test(c) ? 'w' : c
    i++
  }
  const changes = changedAt.values
  return {
    start: start.values,
    headStart: headStart.values,
    parent: parent.values,
    /**
     * The innermost block open at `offset` (one it follows and whose `}` it does not), or -1: the
     * last change at or before it. Not the last block to open before it and out from there past
     * those already closed: a hundred thousand nested blocks closed before it took as many steps.
     */
    innermostOpenAt(offset: number): number {
      let low = 0
      let high = changedAt.length - 1
      let block = -1
      while (low <= high) {
        const middle = (low + high) >> 1
        if (changes[middle] <= offset) [block, low] = [changedTo.values[middle], middle + 1]
        else high = middle - 1
      }
      return block
    },
  }
}

function skipQuoted(source: string, start: number, quote: string): number {
  let j = start + 1
  while (j < source.length && source[j] !== quote && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1
  return j + 1
}

function skipRegex(source: string, start: number): number {
  let j = start + 1
  let inClass = false
  while (j < source.length && source[j] !== '\n') {
    const c = source[j]
    if (c === '\\') j++
    else if (c === '[') inClass = true
    else if (c === ']') inClass = false
    else if (c === '/' && !inClass) return j + 1
    j++
  }
  return j
}

const IDENT = '[A-Za-z_$][\\w$]*'
const PARAMS = '\\([^()]*(?:\\([^()]*\\)[^()]*)*\\)'
/** Object types in it may nest one level (`: Promise<{ user: { id: string } }>`); function types too (`: (v: T) => number`). */
const RETURN_TYPE = '(?::(?:[^{}()=;]|\\{(?:[^{}]|\\{[^{}]*\\})*\\}|\\([^()]*\\)(?:\\s*=>)?)*)?'
/**
 * `: Type` of a variable or field: names joined by `|` or `&`, maybe generic. Nothing looser, or it
 * would run on to the next declaration (`let dir: string` `const run = () => {`) or past a `,`
 * (`{ a: 1, onClick: () => {`).
 */
const TYPE_ATOM = `(?:[\\w$.]+(?:<[^;{}]*?>)?|'[^']*'|"[^"]*")(?:\\[\\])*`
const ANNOTATION = `(?::\\s*(?:(?:readonly|keyof|typeof|unique)\\s+)?${TYPE_ATOM}(?:\\s*[|&]\\s*${TYPE_ATOM})*)?`
const TYPE_PARAMS = '(?:<[^()]*>)?'
/** `function name(...)`, `function* name(...)`, `async function (...)`. */
const FUNCTION_HEAD = new RegExp(`\\bfunction\\b\\s*\\*?\\s*(${IDENT})?\\s*${TYPE_PARAMS}\\s*${PARAMS}\\s*${RETURN_TYPE}\\s*$`)
/** `name = (...) =>`, `name: async x =>`, or an anonymous arrow. */
const ARROW_HEAD = new RegExp(`(?:(#?${IDENT})\\s*${ANNOTATION}\\s*[:=]\\s*)?(?:async\\s*)?(?:${TYPE_PARAMS}\\s*${PARAMS}\\s*${RETURN_TYPE}|${IDENT})\\s*=>\\s*$`)
/** Methods: `name(...) {`, `async *name(...)`, `get name()`, `static name()`, `#name()`. */
const METHOD_HEAD = new RegExp(`(?:^|[\\s;,{}*])(#?${IDENT})\\s*\\??\\s*${TYPE_PARAMS}\\s*${PARAMS}\\s*${RETURN_TYPE}\\s*$`)
const NOT_METHODS = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'function', 'return', 'typeof', 'await', 'yield', 'new', 'do', 'else'])

/** The function a block head declares: its name, '' if anonymous, null if the block is no function. */
function functionNameOfHead(head: string): string | null {
  const text = head.replace(/\s+/g, ' ')
  const declared = FUNCTION_HEAD.exec(text)
  if (declared) {
    if (declared[1]) return declared[1]
    // `const name = function (...)` and `name: function (...)` take the name they are given.
    const assigned = new RegExp(`(#?${IDENT})\\s*[:=]\\s*(?:async\\s+)?function\\b[^]*$`).exec(text)
    return assigned?.[1] ?? ''
  }
  const arrow = ARROW_HEAD.exec(text)
  if (arrow) return arrow[1] ?? ''
  const method = METHOD_HEAD.exec(text)
  if (method && !NOT_METHODS.has(method[1])) return method[1]
  return null
}
