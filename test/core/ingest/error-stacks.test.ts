import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { fingerprintOf, fingerprintParts, isInApp, maskMessage, normalizeFile, normalizeFunction } from '@sightline/core/ingest/errors/fingerprint'
import { enclosingFunctionName } from '@sightline/core/ingest/errors/scope'
import { parseStack, type StackFrame } from '@sightline/core/ingest/errors/stack'

/*
 * Stack strings as engines really write them, all from running the same script: V8's captured from
 * Node, Bun's (JavaScriptCore behind a V8-style format) from Bun, Firefox's from SpiderMonkey's
 * shell and Safari's from JavaScriptCore's (Debian's libmozjs-102-dev and
 * libjavascriptcoregtk-4.0-bin, which .ci/run installs); and some as browsers print them for that
 * script served from https://shop.example/assets/app.js.
 */

const SCRIPT = `class Cart {
  total() {
    throw new RangeError('bad total')
  }
}
function checkout(cart) {
  return [1].map(() => cart.total())
}
async function later() {
  await null
  checkout(new Cart())
}
function run() {
  eval('null.boom')
}
try { run() } catch (e) { say(JSON.stringify(e.stack)) }
later().catch((e) => { say(JSON.stringify(e.stack)) })
class Order { constructor(items) { if (!items) throw new TypeError('no items') } }
try { new Order() } catch (e) { say(JSON.stringify(e.stack)) }
try { new Function('x', 'return x.y')(null) } catch (e) { say(JSON.stringify(e.stack)) }
function say(line) { typeof console === 'undefined' ? print(line) : console.log(line) }
`
const SPIDERMONKEY = '/usr/bin/js102'
const CHROMIUM = '/usr/bin/chromium'
const JAVASCRIPTCORE = '/usr/bin/jsc'

let dir: string
let scriptPath: string
const stacksFrom = async (command: string[]): Promise<string[]> => {
  const proc = Bun.spawn([...command, scriptPath], { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(proc.stdout).text()
  expect(await proc.exited).toBe(0)
  return out.trim().split('\n').map((line) => JSON.parse(line))
}

beforeAll(() => {
  for (const shell of [SPIDERMONKEY, JAVASCRIPTCORE]) {
    if (!existsSync(shell)) throw new Error(`${shell} is missing: install Debian's libmozjs-102-dev and libjavascriptcoregtk-4.0-bin (.ci/run does)`)
  }
  dir = mkdtempSync(join(tmpdir(), 'sl-stacks-'))
  scriptPath = join(dir, 'app.mjs')
  writeFileSync(scriptPath, SCRIPT)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const brief = (frames: StackFrame[]) => frames.map((f) => `${f.function || '?'} ${f.filename.replace(/^.*\//, '')}:${f.lineno}:${f.colno}`)

describe('parseStack', () => {
  test('V8, captured from Node: methods, anonymous arrows, native frames, async frames, eval', async () => {
    const [evalStack, , , asyncStack] = await stacksFrom(['node'])
    expect(brief(parseStack(asyncStack))).toEqual(['Cart.total app.mjs:3:11', '? app.mjs:7:29', 'Array.map <anonymous>:null:null', 'checkout app.mjs:7:14', 'later app.mjs:11:3'])
    expect(parseStack(asyncStack)[0].filename).toBe(`file://${scriptPath}`)
    const evaluated = parseStack(evalStack)
    // The eval'd code is placed where eval was called.
    expect(evaluated[0]).toEqual({ filename: `file://${scriptPath}`, function: 'eval', lineno: 14, colno: 3 })
    expect(evaluated[1]).toEqual({ filename: `file://${scriptPath}`, function: 'run', lineno: 14, colno: 3 })
    expect(evaluated.some((f) => f.filename.startsWith('node:internal/'))).toBe(true)
  })

  test('JavaScriptCore in V8 dress, captured from Bun: tail calls drop frames', async () => {
    const [, , , asyncStack] = await stacksFrom([process.execPath])
    // `() => cart.total()` and `return [1].map(...)` are tail calls: JavaScriptCore drops their frames.
    expect(brief(parseStack(asyncStack))).toEqual(['total app.mjs:3:15', 'map native:1:11', 'later app.mjs:11:3'])
    expect(parseStack(asyncStack)[0].filename).toBe(scriptPath)
  })

  test('V8 `new` and `new Function` frames, captured from Node', async () => {
    const [, construct, created] = await stacksFrom(['node'])
    expect(brief(parseStack(construct))[0]).toBe('new Order app.mjs:18:54')
    // Code made by `new Function` is placed where it was made.
    expect(parseStack(created)[0]).toEqual({ filename: `file://${scriptPath}`, function: 'eval', lineno: 20, colno: 7 })
  })

  test('Chromium, captured from a page: a script from a blob: URL, webpack-internal:// modules, evals of a script without a URL', async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
    try {
      const page = await browser.newPage()
      const [blob, module] = await page.evaluate(async () => {
        const stacks: string[] = []
        const code = `window.fromBlob = function fromBlob() { return [1].map(() => { throw new TypeError('in a blob') }) }`
        const script = Object.assign(document.createElement('script'), { src: URL.createObjectURL(new Blob([code], { type: 'text/javascript' })) })
        await new Promise((loaded) => document.head.append(Object.assign(script, { onload: loaded })))
        const page = window as unknown as { fromBlob(): void; Page(): Promise<void> }
        try {
          page.fromBlob()
        } catch (error) {
          stacks.push(String((error as Error).stack))
        }
        // How webpack's eval devtool runs each module.
        ;(0, eval)("window.Page = async function Page() { await null; throw new Error('in a module') }\n//# sourceURL=webpack-internal:///(app-pages-browser)/./src/page.tsx")
        await page.Page().catch((error: Error) => stacks.push(String(error.stack)))
        return stacks
      })
      const blobFrames = parseStack(blob)
      expect(brief(blobFrames).slice(0, 3)).toEqual([`? ${blobFrames[0].filename.replace(/^.*\//, '')}:1:70`, 'Array.map <anonymous>:null:null', `fromBlob ${blobFrames[0].filename.replace(/^.*\//, '')}:1:52`])
      expect(blobFrames[0].filename).toMatch(/^blob:null\/[0-9a-f-]{36}$/)
      const moduleFrames = parseStack(module)
      expect(moduleFrames[0]).toEqual({ filename: 'webpack-internal:///(app-pages-browser)/./src/page.tsx', function: 'Page', lineno: 1, colno: 57 })
      // The page's evaluate ran from no URL at all: "eval at evaluate (:370:30), <anonymous>:17:7".
      expect(moduleFrames.slice(1).map((f) => [f.filename, isInApp(f.filename)])).toEqual([
        ['<anonymous>', false],
        ['<anonymous>', false],
      ])
    } finally {
      await browser.close()
    }
  })

  test('SpiderMonkey (Firefox), captured from its shell: names of anonymous functions, async markers, eval, new Function', async () => {
    const [evaluated, construct, created, asyncStack] = await stacksFrom([SPIDERMONKEY])
    expect(brief(parseStack(asyncStack))).toEqual(['total app.mjs:3:11', 'checkout/< app.mjs:7:29', 'checkout app.mjs:7:14', 'later app.mjs:11:11', '? app.mjs:17:1'])
    expect(parseStack(evaluated)).toEqual([
      { filename: scriptPath, function: '', lineno: 14, colno: null },
      { filename: scriptPath, function: 'run', lineno: 14, colno: 3 },
      { filename: scriptPath, function: '', lineno: 16, colno: 7 },
    ])
    expect(brief(parseStack(construct))).toEqual(['Order app.mjs:18:54', '? app.mjs:19:7'])
    expect(parseStack(created)[0]).toEqual({ filename: scriptPath, function: 'anonymous', lineno: 20, colno: null })
  })

  test('JavaScriptCore (Safari), captured from its shell: module code, native frames, tail calls, eval', async () => {
    const [evaluated, construct, created, asyncStack] = await stacksFrom([JAVASCRIPTCORE])
    expect(brief(parseStack(asyncStack))).toEqual(['total app.mjs:3:25', 'map [native code]:null:null', 'later app.mjs:11:11'])
    // Safari names eval'd and Function code without a place: those frames carry no file.
    expect(brief(parseStack(evaluated))).toEqual(['eval code :null:null', 'eval [native code]:null:null', 'run app.mjs:14:7', 'module code app.mjs:16:10'])
    expect(brief(parseStack(construct))).toEqual(['Order app.mjs:18:67', 'module code app.mjs:19:16'])
    expect(brief(parseStack(created))).toEqual(['anonymous :null:null', 'module code app.mjs:20:38'])
  })

  test('SpiderMonkey (Firefox): anonymous-in-function names, async markers, eval', () => {
    const stack = [
      'total@https://shop.example/assets/app.js:3:11',
      'checkout/<@https://shop.example/assets/app.js:7:29',
      'checkout@https://shop.example/assets/app.js:7:14',
      'async*later@https://shop.example/assets/app.js:11:3',
      '@https://shop.example/assets/app.js:17:9',
      '',
    ].join('\n')
    expect(brief(parseStack(stack))).toEqual(['total app.js:3:11', 'checkout/< app.js:7:29', 'checkout app.js:7:14', 'later app.js:11:3', '? app.js:17:9'])
    expect(parseStack('run@https://shop.example/assets/app.js line 14 > eval:1:5\n@https://shop.example/assets/app.js:16:7')).toEqual([
      { filename: 'https://shop.example/assets/app.js', function: 'run', lineno: 14, colno: null },
      { filename: 'https://shop.example/assets/app.js', function: '', lineno: 16, colno: 7 },
    ])
  })

  test('JavaScriptCore (Safari): native code, global code, tail calls', () => {
    const stack = ['total@https://shop.example/assets/app.js:3:26', 'map@[native code]', 'later@https://shop.example/assets/app.js:11:11', 'global code@https://shop.example/assets/app.js:17:6'].join('\n')
    expect(brief(parseStack(stack))).toEqual(['total app.js:3:26', 'map [native code]:null:null', 'later app.js:11:11', 'global code app.js:17:6'])
    expect(parseStack('[native code]\nhttps://shop.example/assets/app.js:17:6')).toEqual([
      { filename: '[native code]', function: '', lineno: null, colno: null },
      { filename: 'https://shop.example/assets/app.js', function: '', lineno: 17, colno: 6 },
    ])
  })

  test('URLs with parentheses, @ and ports; messages that look like frames; garbage', () => {
    const next = parseStack('Error: at x@y:1:2\n    at Page (webpack-internal:///(app-pages-browser)/./src/page.tsx:12:9)\n    at https://cdn.example:8443/npm/lib@1.2.3/x.js:1:2')
    expect(next).toEqual([
      { filename: 'webpack-internal:///(app-pages-browser)/./src/page.tsx', function: 'Page', lineno: 12, colno: 9 },
      { filename: 'https://cdn.example:8443/npm/lib@1.2.3/x.js', function: '', lineno: 1, colno: 2 },
    ])
    expect(parseStack('')).toEqual([])
    expect(parseStack('just a message\nwith two lines')).toEqual([])
    // At most 100 frames are kept, the innermost.
    expect(parseStack('    at f (https://x/a.js:1:1)\n'.repeat(500))).toHaveLength(100)
    // A frame is no longer than a ready frame may be, whatever the stack holds.
    const [long] = parseStack(`    at ${'f'.repeat(5000)} (https://x/${'a'.repeat(100_000)}.js:1:1)`)
    expect([long.filename.length, long.function.length]).toEqual([4096, 1024])
  })

  test('a V8 stack of its "Name: message" line alone (a browser-made DOMException, a failed fetch) has no frames, whatever the message holds', () => {
    // Chromium rejects with errors it made outside any script: their stacks hold no "at" line.
    for (const stack of [
      'TypeError: Failed to fetch',
      'Error: no account for bob@example.com',
      'Error: cannot reach localhost:8080',
      'NotFoundError: no user a@b.example:8443',
      'QuotaExceededError: quota of 5242880 exceeded at 12:30:15',
    ]) {
      expect({ stack, frames: parseStack(stack) }).toEqual({ stack, frames: [] })
    }
    // So such reports group as WIRE.md says, by the masked message, not by a "frame" made of the address in it.
    const parts = (message: string) => {
      const frames = parseStack(`Error: ${message}`).map((f) => ({ file: f.filename, function: f.function, inApp: isInApp(f.filename), generated: true, readable: true }))
      return fingerprintParts({ name: 'Error', message, frames })
    }
    expect(parts('no account for bob@example.com')).toEqual(parts('no account for alice@shop.example'))
    // Frames of SpiderMonkey and JavaScriptCore keep every form they come in.
    expect(parseStack('eval code@\nfoo@self-hosted:12:3\nrun@https://x/a.wasm:wasm-function[12]:0x1a2b\nglobal code@https://x/a.js:1:2').map((f) => f.filename)).toEqual([
      '',
      'self-hosted',
      'https://x/a.wasm:wasm-function[12]:0x1a2b',
      'https://x/a.js',
    ])
  })

  test('a stack is whatever the client sent: a long run of spaces in a frame line takes linear time, not seconds', () => {
    const started = performance.now()
    expect(parseStack(`    at f${' '.repeat(64 * 1024)}x:1:2`)).toEqual([{ filename: `f${' '.repeat(4095)}`, function: '', lineno: 1, colno: 2 }])
    // Without a position its words are no place a frame ran (see the multi-line message test).
    expect(parseStack(`    at f${' '.repeat(64 * 1024)}x`)).toEqual([])
    expect(parseStack(`Error\n    at${' '.repeat(64 * 1024)}`)).toEqual([])
    expect(performance.now() - started).toBeLessThan(1000)
  })
})

describe('grouping', () => {
  test('files: hosts, queries, build hashes and versions go; source paths keep their names', () => {
    expect(normalizeFile('https://cdn.example/v1.4.2/assets/app.3f2a1b9c.js?x=1#y', true)).toBe('assets/app.js')
    expect(normalizeFile('/assets/app.77e0d1aa.js', true)).toBe('assets/app.js')
    expect(normalizeFile('https://shop.example/assets/index-DiwrgTda.js', true)).toBe('assets/index.js')
    expect(normalizeFile('https://shop.example/_next/static/chunks/pages/_app-3f2a1b9c4d5e6f70.js', true)).toBe('_next/static/chunks/pages/_app.js')
    expect(normalizeFile('file:///tmp/sl4/dist/main.hctsbpa5.js', true)).toBe('tmp/sl4/dist/main.js')
    expect(normalizeFile('webpack://shop/./src/components/UserProfile.tsx', false)).toBe('src/components/UserProfile.tsx')
    expect(normalizeFile('../../src/checkout.ts', false)).toBe('src/checkout.ts')
  })

  test('a file is whatever the client sent: its query goes in linear time, whatever follows it', () => {
    const started = performance.now()
    expect(normalizeFile(`https://shop.example/assets/app.js${'?'.repeat(50_000)}\nx`, true)).toBe('assets/app.js')
    expect(normalizeFile('https://shop.example/app.js#a\nb', true)).toBe('app.js')
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('function names written the same whichever engine wrote them', () => {
    const same = [['Cart.total', 'total', 'async Cart.total', 'Object.total', 'total [as sum]'], ['new Cart', 'Cart'], ['checkout/<', '', '<anonymous>', 'global code', 'Object.<anonymous>'], ['outer/inner', 'inner']]
    for (const names of same) expect(new Set(names.map(normalizeFunction)).size).toBe(1)
  })

  test('a function name is whatever the client sent: a long run of blanks before "[as" takes linear time, not seconds', () => {
    const started = performance.now()
    expect(normalizeFunction(`total${' '.repeat(100_000)}[as sum]`)).toBe('total')
    expect(normalizeFunction(`total${' '.repeat(100_000)}[as ${']'.repeat(100_000)}`)).toBe(`total${' '.repeat(100_000)}[as ${']'.repeat(100_000)}`)
    expect(normalizeFunction(`total${'\t'.repeat(100_000)}[as sum`)).toBe(`total${'\t'.repeat(100_000)}[as sum`)
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('messages: numbers, ids, urls and e-mail addresses masked', () => {
    expect(maskMessage('order 1234 of 0b7f6a2c-1111-4a4a-8b8b-123456789abc failed at https://api.example/x?id=9 for a@b.example (deadbeef42)')).toBe(
      'order <n> of <uuid> failed at <url> for <email> (<hex>)',
    )
  })

  test('a message is whatever the client sent: long runs that are no URL or address are masked in linear time', () => {
    // A batch's hundred reports, each 2 KB (what is masked of a message) of a run that looks like the
    // start of a URL or an address to the very end: each start in it was tried to the end, 3 ms a message.
    const messages = ['a.', 'g1', 'a-', 'x+'].flatMap((unit) => Array.from({ length: 25 }, (_, i) => `${unit.repeat(1024)}${i}`))
    const started = performance.now()
    const masked = messages.map(maskMessage)
    const elapsedMs = performance.now() - started
    expect(masked[0]).toBe(`${'a.'.repeat(1024)}`)
    // A run of letters and digits taking turns is an id (see maskMessage), masked whole.
    expect(masked[25]).toBe('<id>')
    // What a match after another starts with, and the first of two in one run, are as before.
    expect(maskMessage('mail a@b.example+c@d.example, see x.y-z://h/p and 1a.b://q')).toBe('mail <email><email>, see <url> and <n>a.<url>')
    // About 3 ms here, against 200 before; the bound leaves room for a busy machine.
    expect(elapsedMs).toBeLessThan(60)
  })

  test('in app: not the browser, extensions or dependencies', () => {
    for (const file of ['<anonymous>', '[native code]', 'native', 'node:internal/modules/run_main', 'chrome-extension://abc/x.js', 'https://shop.example/node_modules/react/index.js', '']) {
      expect(isInApp(file)).toBe(false)
    }
    expect(isInApp('https://shop.example/assets/app.js')).toBe(true)
  })

  test("in app: a source map's dependency source written relative to the map, node_modules first, is not the app's", () => {
    // esbuild, Bun or Rollup writing the map beside node_modules: the sources start with the folder itself.
    expect(isInApp('node_modules/react-dom/cjs/react-dom.development.js')).toBe(false)
    expect(isInApp('src/node_modules.ts')).toBe(true)
    expect(isInApp('src/my_node_modules/x.ts')).toBe(true)
  })

  const group = (stack: string, name = 'RangeError', message = 'bad total') =>
    fingerprintOf(
      fingerprintParts({
        name,
        message,
        frames: parseStack(stack).map((f) => ({ file: f.filename, function: f.function, inApp: isInApp(f.filename), generated: true, readable: true })),
      }),
    )

  test('one bug as V8, SpiderMonkey and JavaScriptCore really report it: one fingerprint', async () => {
    const captured = await Promise.all([['node'], [SPIDERMONKEY], [JAVASCRIPTCORE], [process.execPath]].map(stacksFrom))
    for (const scenario of [1, 3]) {
      const [v8, ...others] = captured.map((stacks) => group(stacks[scenario], 'TypeError', 'x'))
      expect(others).toEqual([v8, v8, v8])
    }
  })

  test('one bug, three engines, two deployments: one fingerprint', () => {
    const chrome = '    at Cart.total (https://shop.example/assets/app.3f2a1b9c.js:3:11)\n    at https://shop.example/assets/app.3f2a1b9c.js:7:29\n    at Array.map (<anonymous>)\n    at checkout (https://shop.example/assets/app.3f2a1b9c.js:7:14)'
    const firefox = 'total@https://shop.example/assets/app.77e0d1aa.js?v=2:3:11\ncheckout/<@https://shop.example/assets/app.77e0d1aa.js?v=2:7:29\ncheckout@https://shop.example/assets/app.77e0d1aa.js?v=2:7:14'
    const safari = 'total@https://cdn.example/assets/app.3f2a1b9c.js:3:26\nmap@[native code]\nlater@https://cdn.example/assets/app.3f2a1b9c.js:11:11'
    expect(group(firefox)).toBe(group(chrome))
    expect(group(safari)).toBe(group(chrome))
    // Another function, or another kind of error, is another Issue.
    expect(group(chrome.replace('Cart.total', 'Cart.count'))).not.toBe(group(chrome))
    expect(group(chrome, 'TypeError')).not.toBe(group(chrome))
  })

  test('no in-app frame: the masked message; a client fingerprint wins and may include the default', () => {
    const vendor = '    at x (https://shop.example/node_modules/lib/index.js:1:2)'
    expect(group(vendor, 'Error', 'order 12 failed')).toBe(group(vendor, 'Error', 'order 977 failed'))
    expect(group(vendor, 'Error', 'order 12 failed')).not.toBe(group(vendor, 'Error', 'payment 12 failed'))
    const parts = (clientFingerprint: string[]) => fingerprintParts({ name: 'E', message: 'm', frames: [], clientFingerprint })
    expect(parts(['checkout', 'stripe'])).toEqual(['client', 'checkout', 'stripe'])
    expect(parts(['{{ default }}', 'eu'])).toEqual(['client', 'message', 'E', 'm', 'eu'])
  })
})

describe('enclosingFunctionName', () => {
  const at = (source: string, marker = '/*here*/') => {
    const before = source.slice(0, source.indexOf(marker)).split('\n')
    return enclosingFunctionName(source.replace(marker, ''), before.length, before.at(-1)!.length)
  }

  test('declarations, methods, arrows assigned to names, anonymous callbacks, top level', () => {
    expect(at('export function validateCoupon(code: string): boolean {\n  if (code.length < 3) {\n    /*here*/throw new Error()\n  }\n}')).toBe('validateCoupon')
    expect(at('class Cart {\n  items: number[] = []\n  total(): number {\n    return this.items.reduce((a, b) => a + b, /*here*/0)\n  }\n}')).toBe('total')
    expect(at('class Cart {\n  async *walk<T>(x: T) {\n  /*here*/}\n}')).toBe('walk')
    expect(at('const handler = async (event: Event) => {\n  /*here*/boom()\n}')).toBe('handler')
    expect(at('const api = {\n  load: function () {\n    /*here*/x()\n  },\n}')).toBe('load')
    expect(at('items.forEach((item) => {\n  /*here*/use(item)\n})')).toBe('')
    expect(at('setup()\n/*here*/boom()')).toBe('')
  })

  test('object types, destructuring and object literals in a head are part of it', () => {
    expect(at('export async function loadProfile(id: string): Promise<{ id: string }> {\n  /*here*/throw new Error()\n}')).toBe('loadProfile')
    expect(at('function Row({ id, label }: { id: string; label: string }): void {\n  /*here*/use(id)\n}')).toBe('Row')
    expect(at('export const Page = ({ id }: Props) => {\n  /*here*/use(id)\n}')).toBe('Page')
    expect(at('const f = ({ a }: { a: number }): { b: { c: number } } => {\n  /*here*/use(a)\n}')).toBe('f')
    expect(at('function merge(a = {}, rows: readonly { id: string }[]) {\n  /*here*/use(a)\n}')).toBe('merge')
    expect(at("function check(x: unknown): boolean | 'invalid' {\n  /*here*/use(x)\n}")).toBe('check')
    expect(at('export function validator<T>(schema: T): (value: unknown) => T {\n  /*here*/use(schema)\n}')).toBe('validator')
    expect(at('class Cart {\n  get totals(): { net: number } {\n    /*here*/use(this)\n  }\n}')).toBe('totals')
    // The key the function is given, not an earlier one of the same object; not the declaration before it.
    expect(at('const handlers = { retries: 3, onClick: (event) => {\n  /*here*/use(event)\n} }')).toBe('onClick')
    expect(at('let dir: string\nconst stacksFrom = async (command: string[]): Promise<string[]> => {\n  /*here*/use(dir)\n}')).toBe('stacksFrom')
    expect(at('items.forEach(({ id }) => {\n  /*here*/use(id)\n})')).toBe('')
  })

  test('braces inside strings, templates, comments and regular expressions do not confuse it', () => {
    const source = [
      'function outer() {',
      "  const a = '{'; const b = \"}}\"; // }",
      '  const c = `${a}{${"}"}` /* { */',
      '  const re = /[{}]\\}/g',
      '  /*here*/return inner()',
      '}',
    ].join('\n')
    expect(at(source)).toBe('outer')
    expect(enclosingFunctionName('function f() {}', 99, 0)).toBeNull()
  })
})
