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
  const offset = offsetOf(source, line, column)
  if (offset === null) return null
  const heads = openBlockHeads(source, offset)
  for (let i = heads.length - 1; i >= 0; i--) {
    const name = functionNameOfHead(heads[i])
    if (name !== null) return name
  }
  return ''
}

function offsetOf(source: string, line: number, column: number): number | null {
  let offset = 0
  for (let current = 1; current < line; current++) {
    const next = source.indexOf('\n', offset)
    if (next < 0) return null
    offset = next + 1
  }
  const end = source.indexOf('\n', offset)
  const lineLength = (end < 0 ? source.length : end) - offset
  return offset + Math.min(Math.max(column, 0), lineLength)
}

/** Template literal `${`: its `}` returns to the template, not to code. */
const TEMPLATE = '\u0000template'
/** After these, a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^'])
const KEYWORDS_BEFORE_REGEX = /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/

function openBlockHeads(source: string, offset: number): string[] {
  const heads: string[] = []
  let segmentStart = 0
  let lastSignificant = ''
  let i = 0
  const skipTemplate = (from: number): number => {
    // From inside a template literal to past its end, or to just past a `${` (pushing a marker).
    let j = from
    while (j < offset) {
      const c = source[j]
      if (c === '\\') j += 2
      else if (c === '`') return j + 1
      else if (c === '$' && source[j + 1] === '{') {
        heads.push(TEMPLATE)
        return j + 2
      } else j++
    }
    return j
  }
  while (i < offset) {
    const c = source[i]
    const next = source[i + 1]
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i)
      i = end < 0 ? offset : end
      continue
    }
    if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      i = end < 0 ? offset : end + 2
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
    if (c === '{') {
      heads.push(source.slice(segmentStart, i).slice(-400))
      segmentStart = i + 1
    } else if (c === '}') {
      const head = heads.pop()
      segmentStart = i + 1
      if (head === TEMPLATE) {
        i = skipTemplate(i + 1)
        lastSignificant = '`'
        continue
      }
    } else if (c === ';') {
      segmentStart = i + 1
    }
    if (!/\s/.test(c)) lastSignificant = /[\w$]/.test(c) ? 'w' : c
    i++
  }
  return heads.filter((head) => head !== TEMPLATE)
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
const RETURN_TYPE = '(?::[^{}()=;]*(?:\\([^()]*\\)[^{}()=;]*)*)?'
const TYPE_PARAMS = '(?:<[^()]*>)?'
/** `function name(...)`, `function* name(...)`, `async function (...)`. */
const FUNCTION_HEAD = new RegExp(`\\bfunction\\b\\s*\\*?\\s*(${IDENT})?\\s*${TYPE_PARAMS}\\s*${PARAMS}\\s*${RETURN_TYPE}\\s*$`)
/** `name = (...) =>`, `name: async x =>`, or an anonymous arrow. */
const ARROW_HEAD = new RegExp(`(?:(#?${IDENT})\\s*(?::[^=]*?)?\\s*[:=]\\s*)?(?:async\\s*)?(?:${TYPE_PARAMS}\\s*${PARAMS}|${IDENT})\\s*${RETURN_TYPE}\\s*=>\\s*$`)
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
