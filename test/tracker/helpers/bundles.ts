import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import * as esbuild from 'esbuild'
import { minify } from 'terser'

/**
 * A small app built as browsers get it, by the bundlers an app uses, and run by the engines of
 * Chrome (V8, in Node), Firefox (SpiderMonkey's shell) and Safari (JavaScriptCore's shell, and Bun)
 * for their real stacks.
 */

/** What the app throws, each from another kind of function in another module. */
export const SCENARIOS = {
  /** A class method. */
  checkout: { file: 'src/cart.ts', throws: "throw new RangeError('cart is empty')", function: 'total', name: 'RangeError', message: 'cart is empty' },
  /** An arrow passed as a callback, in a module two folders down. */
  showPrices: { file: 'src/lib/util/format.ts', throws: "throw new TypeError('price is missing')", function: '', name: 'TypeError', message: 'price is missing' },
  /** An async function, after an await. */
  openProfile: { file: 'src/api/profile.ts', throws: "throw new Error('no profile id')", function: 'loadProfile', name: 'Error', message: 'no profile id' },
  /** A constructor, called with `new`. */
  emptyCart: { file: 'src/cart.ts', throws: "throw new TypeError('no items')", function: 'constructor', name: 'TypeError', message: 'no items' },
} as const
export type Scenario = keyof typeof SCENARIOS

const SOURCES: Record<string, string> = {
  'src/cart.ts': `export class Cart {
  items: { price: number }[]
  constructor(items: { price: number }[] | null) {
    if (!items) {
      throw new TypeError('no items')
    }
    this.items = items
  }
  total(): number {
    if (this.items.length === 0) {
      throw new RangeError('cart is empty')
    }
    return this.items.reduce((sum, item) => sum + item.price, 0)
  }
}
`,
  'src/lib/util/format.ts': `export function formatPrices(prices: (number | null)[]): string[] {
  return prices.map((price) => {
    if (price === null) {
      throw new TypeError('price is missing')
    }
    return price.toFixed(2)
  })
}
`,
  'src/api/profile.ts': `export async function loadProfile(id: string): Promise<{ id: string }> {
  await Promise.resolve()
  if (!id) {
    throw new Error('no profile id')
  }
  return { id }
}
`,
  'src/main.ts': `import { Cart } from './cart'
import { formatPrices } from './lib/util/format'
import { loadProfile } from './api/profile'

function checkout(): number {
  const cart = new Cart([])
  const total = cart.total()
  return total
}

function showPrices(): string[] {
  const shown = formatPrices([1, null])
  return shown
}

async function openProfile(): Promise<string> {
  const profile = await loadProfile('')
  return profile.id
}

function emptyCart(): Cart {
  const cart = new Cart(null)
  return cart
}

;(globalThis as Record<string, unknown>).shop = { checkout, showPrices, openProfile, emptyCart }
`,
  // Another library's code, for a bundle concatenated from two.
  'vendor/lib.ts': `export function clamp(value: number, low: number, high: number): number {
  return Math.min(Math.max(value, low), high)
}
;(globalThis as Record<string, unknown>).lib = { clamp }
`,
}

/**
 * The sources of a release. `moved` is the same code moved down by new code above it in every
 * file, as the next release of an app often is: the bugs are where they were, at other lines.
 */
export function writeApp(root: string, { moved = false } = {}): void {
  for (const [path, source] of Object.entries(SOURCES)) {
    const above = moved ? `/** Added in the next release. */\nexport const ${basename(path, '.ts').replace(/\W/g, '')}Version = 2\n\n` : ''
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), above + source)
  }
}

/** The line (1-based) of `text` in an app file, and the columns (1-based) where each of `tokens` on it starts. */
export function positionIn(root: string, file: string, text: string, tokens: string[] = []): { line: number; columns: number[] } {
  const lines = readFileSync(join(root, file), 'utf8').split('\n')
  const index = lines.findIndex((line) => line.includes(text))
  if (index < 0) throw new Error(`${text} is not in ${file}`)
  return { line: index + 1, columns: tokens.map((token) => lines[index].indexOf(token) + 1) }
}

export type Toolchain = 'bun' | 'esbuild-no-sources' | 'esbuild-inline' | 'bun-then-terser' | 'concatenated'

/** Builds the app under `root/src` into `out` with a toolchain; returns the script a page would load. */
export async function buildApp(root: string, out: string, toolchain: Toolchain): Promise<string> {
  const entry = join(root, 'src/main.ts')
  const esbuildOptions: esbuild.BuildOptions = { entryPoints: [entry], bundle: true, minify: true, format: 'iife', outdir: out, logLevel: 'silent' }
  switch (toolchain) {
    case 'bun':
      // Hashed names, a linked map with sourcesContent and a debug id, no `names`.
      return bunBuild(entry, out, '[name].[hash].[ext]')
    case 'esbuild-no-sources':
      // A linked map with `names` and a `sourceRoot`, without sourcesContent.
      await esbuild.build({ ...esbuildOptions, sourcemap: 'linked', sourcesContent: false, sourceRoot: 'webpack://shop/', entryNames: '[name]-[hash]' })
      return onlyScript(out)
    case 'esbuild-inline':
      // The map inside the script, as a data: URL.
      await esbuild.build({ ...esbuildOptions, sourcemap: 'inline' })
      return onlyScript(out)
    case 'bun-then-terser': {
      // Two stages, as the tracker's own build: terser's map carries Bun's through to the sources.
      const script = await bunBuild(entry, out, '[name].[ext]')
      const minified = await minify(readFileSync(script, 'utf8'), {
        compress: { passes: 2 },
        sourceMap: { content: readFileSync(`${script}.map`, 'utf8'), url: `${basename(script)}.map` },
      })
      writeFileSync(script, minified.code!)
      writeFileSync(`${script}.map`, minified.map as string)
      return script
    }
    case 'concatenated':
      return concatenate(root, out)
  }
}

async function bunBuild(entry: string, out: string, naming: string): Promise<string> {
  const result = await Bun.build({ entrypoints: [entry], outdir: out, minify: true, sourcemap: 'linked', naming, target: 'browser', format: 'iife' })
  if (!result.success) throw new AggregateError(result.logs, 'build failed')
  return result.outputs.find((output) => output.kind === 'entry-point')!.path
}

const onlyScript = (out: string) => join(out, readdirSync(out).find((name) => name.endsWith('.js'))!)

/**
 * A vendor bundle and the app's bundle joined into one script, with an indexed source map
 * (`sections`) as concatenating tools write it: each part's map at the line its code starts on.
 */
async function concatenate(root: string, out: string): Promise<string> {
  const parts = join(out, 'parts')
  const built = await esbuild.build({ entryPoints: { vendor: join(root, 'vendor/lib.ts'), app: join(root, 'src/main.ts') }, bundle: true, minify: true, format: 'iife', outdir: parts, sourcemap: 'external', write: false, logLevel: 'silent' })
  const text = (name: string) => built.outputFiles.find((file) => file.path === join(parts, name))!.text
  const code: string[] = []
  const sections: { offset: { line: number; column: number }; map: unknown }[] = []
  let line = 0
  for (const part of ['vendor.js', 'app.js']) {
    const script = text(part).replace(/\/\/# sourceMappingURL=.*\n?$/, '')
    sections.push({ offset: { line, column: 0 }, map: JSON.parse(text(`${part}.map`)) })
    code.push(script)
    line += script.split('\n').length - 1
  }
  mkdirSync(out, { recursive: true })
  writeFileSync(join(out, 'bundle.js'), `${code.join('')}//# sourceMappingURL=bundle.js.map\n`)
  writeFileSync(join(out, 'bundle.js.map'), JSON.stringify({ version: 3, file: 'bundle.js', sections }))
  return join(out, 'bundle.js')
}

export type Engine = 'v8' | 'spidermonkey' | 'javascriptcore' | 'bun'
/** The command-line shells of Firefox's and Safari's engines, from Debian's libmozjs-102-dev and libjavascriptcoregtk-4.0-bin. */
export const SHELLS = { spidermonkey: '/usr/bin/js102', javascriptcore: '/usr/bin/jsc' }

/** Calls every scenario, each stack printed as one JSON line; `print` in the engines' shells, console.log elsewhere. */
const RUNNER = `const say = typeof print === 'function' && typeof console === 'undefined' ? print : (line) => console.log(line)
const report = (scenario) => (error) => say(JSON.stringify({ scenario, stack: String(error.stack) }))
for (const scenario of ['checkout', 'showPrices', 'emptyCart']) {
  try { globalThis.shop[scenario]() } catch (error) { report(scenario)(error) }
}
globalThis.shop.openProfile().catch(report('openProfile'))
`

/**
 * The stack of each scenario, as `engine` writes it for `script` served at `servedAs`. Node and
 * Bun load the script as a file; the shells run it and the runner in one global scope.
 */
export async function stacksOf(script: string, engine: Engine, servedAs: string): Promise<Record<Scenario, string>> {
  const runner = join(dirname(script), '..', `${basename(dirname(script))}-run-${engine}.js`)
  writeFileSync(runner, engine === 'v8' || engine === 'bun' ? `require(${JSON.stringify(script)})\n${RUNNER}` : RUNNER)
  const command = { v8: ['node', runner], bun: [process.execPath, runner], spidermonkey: [SHELLS.spidermonkey, '-f', script, '-f', runner], javascriptcore: [SHELLS.javascriptcore, script, runner] }[engine]
  const proc = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if ((await proc.exited) !== 0) throw new Error(`${command.join(' ')} failed: ${err}`)
  const stacks = Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { scenario: Scenario; stack: string })
      .map(({ scenario, stack }) => [scenario, stack.replaceAll(`file://${script}`, servedAs).replaceAll(script, servedAs)]),
  )
  for (const scenario of Object.keys(SCENARIOS)) if (!stacks[scenario]) throw new Error(`${engine} printed no stack for ${scenario}: ${out}`)
  return stacks as Record<Scenario, string>
}
