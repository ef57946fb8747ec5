/**
 * `Error.stack` strings into frames, innermost first. Two families of formats exist:
 *
 *   V8 (Chrome, Edge, Node, and Bun, which imitates it):
 *     "    at submit (https://shop.example/app.js:1:230)"    "    at https://shop.example/app.js:1:99"
 *     "    at async Promise.all (index 0)"                    "    at eval (eval at run (https://x/a.js:3:7), <anonymous>:1:1)"
 *   SpiderMonkey (Firefox) and JavaScriptCore (Safari):
 *     "submit@https://shop.example/app.js:1:230"             "@https://shop.example/app.js:1:99"
 *     "async*load@https://x/a.js:2:5"                         "run@https://x/a.js line 3 > eval:1:1"
 *     "forEach@[native code]"                                 "global code@https://x/a.js:9:1"
 *
 * Parsing is pure and never throws: a line that is not a frame is skipped.
 */

import { sliceChars } from '../shared/text'

export interface StackFrame {
  filename: string
  /** As the engine wrote it, '' when anonymous. */
  function: string
  lineno: number | null
  colno: number | null
}

export const MAX_FRAMES = 100
/** A frame keeps at most this much of its file and function, parsed or sent ready (see reportedFrames). */
export const MAX_FILENAME_CHARS = 4096
export const MAX_FUNCTION_CHARS = 1024

export function parseStack(stack: string, maxFrames = MAX_FRAMES): StackFrame[] {
  const lines = stack.split('\n')
  // V8 puts "Name: message" first, and a message may hold anything, even "@": when the stack has
  // V8 frames, only its "at" lines are frames.
  const v8 = lines.some((line) => v8FrameText(line) !== null)
  const frames: StackFrame[] = []
  for (const line of lines) {
    const frame = v8 ? parseV8Line(line) : parseAtSignLine(line)
    // A stack is whatever the client sent: one "frame" may be a megabyte long, and would be an Issue's culprit.
    if (frame) frames.push({ ...frame, filename: sliceChars(frame.filename, 0, MAX_FILENAME_CHARS), function: sliceChars(frame.function, 0, MAX_FUNCTION_CHARS) })
    if (frames.length >= maxFrames) break
  }
  return frames
}

/**
 * What follows "at" on a V8 frame line, trimmed; null for a line that is not a frame. Trimmed by
 * hand: a pattern such as /^\s*at\s+(.+?)\s*$/ backtracks quadratically over a long run of
 * spaces, and a report's stack is whatever the client sent (64 KB of spaces took seconds).
 */
function v8FrameText(line: string): string | null {
  const text = line.trim()
  return /^at\s/.test(text) ? text.slice(2).trim() : null
}

function parseV8Line(line: string): StackFrame | null {
  const body = v8FrameText(line)
  if (!body) return null
  let fn = ''
  let location = body
  // "fn (location)": the location is the parenthesized group that ends the line; URLs may hold
  // parentheses of their own (webpack-internal:///(app-pages-browser)/...), so they are counted.
  if (body.endsWith(')')) {
    const open = openingParen(body)
    if (open > 0) {
      fn = body.slice(0, open).trim()
      location = body.slice(open + 1, -1)
    }
  }
  fn = fn.replace(/^async\s+/, '')
  location = location.replace(/^async\s+/, '')
  // "eval at outer (https://x/a.js:3:7), <anonymous>:1:1": the code came from that script position.
  // Chromium writes "eval at run (:370:30), ..." when the eval ran in a script without a URL (one
  // a debugger or an automation tool ran): no file of the app.
  if (location.startsWith('eval at ')) {
    const origin = /\(([^()]*):(\d+:\d+)\)/.exec(location)
    if (origin) location = origin[1] ? `${origin[1]}:${origin[2]}` : '<anonymous>'
  }
  if (!isV8Location(location)) return null
  return frameAt(fn === '<anonymous>' ? '' : fn, location)
}

/**
 * Where V8 says a frame ran: a position (`url:line:column`, a path with blanks in it too), a URL
 * or `node:` module, or one of its few words. A message may run over several lines, and one of them
 * may start with "at" ("Error: invalid order\nat least one item required"): taken for a frame, its
 * words would be the innermost in-app "file", and group the report instead of its real top frame.
 */
const isV8Location = (location: string): boolean =>
  /:\d+(?::\d+)?$/.test(location) ||
  (!/\s/.test(location) && (location.includes(':') || location === 'native' || location === '<anonymous>')) ||
  /^index \d+$/.test(location) ||
  location === 'unknown location'

function openingParen(text: string): number {
  let depth = 0
  for (let i = text.length - 1; i >= 0; i--) {
    if (text[i] === ')') depth++
    else if (text[i] === '(' && --depth === 0) return i
  }
  return -1
}

function parseAtSignLine(line: string): StackFrame | null {
  const text = line.trim()
  if (text === '') return null
  if (text === '[native code]') return { filename: '[native code]', function: '', lineno: null, colno: null }
  const at = text.indexOf('@')
  // Safari writes some top-level frames as a bare location: a URL, which holds no blank. A V8 stack
  // without "at" lines (an error the browser made outside any script, such as a failed fetch) is
  // its "Name: message" line alone, and "Error: cannot reach localhost:8080" is no frame.
  if (at < 0) return /:\d+(?::\d+)?$/.test(text) && !/\s/.test(text) ? frameAt('', text) : null
  const head = text.slice(0, at)
  // Nor is "Error: no account for bob@example.com" (taken for a frame, the address in it would group
  // the report rather than its masked message): no engine writes ": " in a function's name, and a
  // frame's place is a URL or a position ("self-hosted:12:3"), "[native code]", or nothing
  // (JavaScriptCore's "eval code@").
  if (head.includes(': ')) return null
  // Firefox prefixes async frames with their cause: "async*load", "setTimeout handler*tick".
  const fn = head.replace(/^.*\*/, '')
  const location = text.slice(at + 1)
  // Firefox: "https://x/a.js line 3 > eval:1:1" (or "> Function") names the script position of the eval.
  const evaluated = /^(.*?) line (\d+) > (?:eval|Function)/.exec(location)
  if (evaluated) return { filename: evaluated[1], function: fn, lineno: Number(evaluated[2]), colno: null }
  if (location !== '' && location !== '[native code]' && !location.includes(':')) return null
  return frameAt(fn, location)
}

/** "url:line:col", "url:line" or a bare name such as "native" or "<anonymous>". */
function frameAt(fn: string, location: string): StackFrame {
  const full = /^(.*):(\d+):(\d+)$/.exec(location)
  if (full) return { filename: full[1], function: fn, lineno: Number(full[2]), colno: Number(full[3]) }
  const lineOnly = /^(.*):(\d+)$/.exec(location)
  if (lineOnly) return { filename: lineOnly[1], function: fn, lineno: Number(lineOnly[2]), colno: null }
  return { filename: location, function: fn, lineno: null, colno: null }
}
