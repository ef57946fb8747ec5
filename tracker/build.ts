/**
 * `npm run build`:
 * - dist/t.js: the script-tag bundle, all of it inside. The relay serves this one file as
 *   `<prefix>/t.js`, so nothing else has to be found through the relay.
 * - dist/esm: the package: index.js, and what `start()` imports: record.js, the recorder, auto.js,
 *   automatic tracking, and presence.js, the heartbeat (an app's bundler splits them off and serves
 *   them from the app's own origin);
 *   connection.js, imported by the transport when first needed (gzip, the reachability probe) and by
 *   `testConnection()`; dist/types.
 * - dist/bin/upload-sourcemaps.js: the command, for Node.
 */
import { rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import type { BunPlugin } from 'bun'
import { minify } from 'terser'

const root = import.meta.dir
export const DIST = join(root, 'dist')

/**
 * rrweb code the recorder never runs, given the options src/record.ts passes, is cut from the bundle:
 * each cut takes the text from `from` up to `to` (not included) and puts `kept` in its place. A cut is
 * checked against the pinned rrweb version's text (the first `from`, a `to` after it) and fails the build
 * if that text moves.
 * - Canvas recording is off (`recordCanvas: false`, rrweb's default), so rrweb's canvas code (its 2D and
 *   WebGL observers, base64 encoder and inlined worker, about 2 KB gzipped) never runs: a manager that
 *   does nothing takes its place.
 */
const RRWEB_CUTS: { from: string; to: string; kept: string; within?: string; unpassed?: string }[] = [
  {
    from: 'var chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";',
    to: 'class StylesheetManager {',
    kept: 'class CanvasManager { reset() {} freeze() {} unfreeze() {} lock() {} unlock() {} }\n',
    within: 'class CanvasManager {',
    unpassed: 'recordCanvas',
  },
  // No hooks are passed: rrweb's wrapping of every observer's callback in one that calls a hook first
  // (about 290 B gzipped) goes.
  { from: 'function mergeHooks(o, hooks) {', to: 'function initObservers(', kept: 'function mergeHooks() {}\n', unpassed: 'hooks' },
  // Cross-origin frames are not recorded by the page around them (`recordCrossOriginIframes`, off by
  // default; a frame's own tracker records it): the handling of the events they post, and the mirrors
  // of their ids, go (about 900 B gzipped).
  { from: '  handleMessage(message) {', to: 'class ShadowDomManager {', kept: '}\n', within: 'transformCrossOriginEvent(', unpassed: 'recordCrossOriginIframes' },
  { from: '    if (this.recordCrossOriginIframes) {\n      window.addEventListener(', to: '  addIframe(iframeEl) {', kept: '  }\n' },
  { from: '    if (this.recordCrossOriginIframes)\n      (_a2 = iframeEl.contentWindow)', to: '    (_b = this.loadListener)', kept: '' },
  { from: 'class CrossOriginIframeMirror {', to: 'class IframeManager {', kept: 'class CrossOriginIframeMirror {}\n' },
]
/** The recorder's options, as src/record.ts passes them: an option a cut relies on being unpassed must stay so. */
const RECORD_SOURCE = await Bun.file(join(root, 'src/record.ts')).text()
const withoutUnusedRrweb: BunPlugin = {
  name: 'rrweb-without-unused-code',
  setup(build) {
    build.onLoad({ filter: /@rrweb[\\/]record[\\/]dist[\\/]record\.js$/ }, async ({ path }) => {
      let source = await Bun.file(path).text()
      for (const { from, to, kept, within, unpassed } of RRWEB_CUTS) {
        if (unpassed && new RegExp(`\\b${unpassed}\\s*:`).test(RECORD_SOURCE)) throw new Error(`src/record.ts passes rrweb's ${unpassed}: its code is cut from the bundle (build.ts)`)
        const start = source.indexOf(from)
        const end = source.indexOf(to, start)
        if (start < 0 || end < 0 || (within && !source.slice(start, end).includes(within))) {
          throw new Error(`${path}: rrweb's code is not where this build expects it (${from}); check the rrweb version`)
        }
        source = source.slice(0, start) + kept + source.slice(end)
      }
      return { contents: source, loader: 'js' }
    })
  },
}

/**
 * Members of the tracker's internal objects (what its modules hand each other, and what their
 * factories return), shortened by terser in the browser bundles: about 170 B of the core, gzipped.
 * None is sent, stored or public, and none may be: terser renames every property of the name in the
 * bundle, so the build fails when one is in the public declarations or in rrweb's code, and
 * test/tracker/build.test.ts checks them against the wire's fields and what the tracker stores.
 * index.js and the modules it imports share one name cache: they are handed the redaction, the
 * messages and the transport, and the recorder returns its Recording, across the files. (Terser
 * also shortens listed names that some DOM interface has too, such as `identity`, `messages` or
 * `flush`: `builtins` lets it, as no listed name may be a property the tracker reads of the page's
 * objects or of JavaScript's; the names of those that are, such as `set`, `clear` or `split`, are
 * never listed.)
 */
export const INTERNAL_NAMES = [
  // redaction
  'privacyFirst', 'masked', 'visibleText', 'pageUrl', 'shownSelectors',
  // recording
  'snapshot',
  // identity
  'preexisting', 'current', 'setAttributes', 'holdTab', 'releaseTab', 'nextSeq',
  // transport and its answers
  'post', 'answering', 'retryAfter', 'local', 'timedOut',
  // delivery and the outbox (`outbox` itself is public: getConnectionStatus().dropped.outbox)
  'deliver', 'drain', 'settle', 'persistPending', 'halted', 'canSend', 'drops', 'answered', 'parcel', 'timer', 'alone', 'idle', 'resume', 'shown', 'put',
  // messages and what automatic tracking is given
  'owner', 'here', 'pageView', 'record', 'report', 'floodGate', 'withPageUrls', 'flooded', 'redaction', 'early', 'flush',
  // the parts the tracker wires together, the logger's settings, the per-tab store
  'identity', 'delivery', 'messages', 'configure', 'tab',
  // where the tracker sends, and what getConnectionStatus is told
  'base', 'storageRefused', 'later', 'running',
]
const internalName = new RegExp(`^(${INTERNAL_NAMES.join('|')})$`)

/**
 * Where `name` is a property in `text` (code or declarations): accessed, a key, a method, a quoted
 * name. Comments and import and export lists do not count; a call at the start of a line does, to be
 * safe.
 */
export function namesProperty(text: string, name: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$|\b(export|import)\s*\{[^}]*\}/gm, '')
  return new RegExp(`\\.${name}\\b|\\b${name}\\??\\s*:|^\\s*(async |get |set |static )?${name}\\s*[(<]|['"\`]${name}['"\`]|[{,]\\s*${name}\\s*[,}]`, 'm').test(code)
}

/** A listed name that is a property of the public API, or of rrweb, would be renamed where it must not be. */
async function checkInternalNames(outdir: string) {
  const texts = await Promise.all([join(outdir, 'types/index.d.ts'), join(outdir, 'types/types.d.ts'), Bun.resolveSync('@rrweb/record', root)].map((path) => Bun.file(path).text()))
  const clashes = INTERNAL_NAMES.filter((name) => texts.some((text) => namesProperty(text, name)))
  if (clashes.length) throw new Error(`names of the public API or of rrweb must not be shortened: ${clashes.join(', ')}`)
}

/** In the package, the recorder, automatic tracking and presence stay modules of their own, imported by `start()`; so does connection.js (gzip, the probe, `testConnection()`). */
const startedApart: BunPlugin = {
  name: 'started-apart',
  setup(build) {
    build.onResolve({ filter: /^\.\/(record|auto|presence|connection)$/ }, ({ path }) => ({ path: path + '.js', external: true }))
  },
}

/**
 * In t.js, one file, what the package imports later is inside: imported statically, it is bundled
 * like the rest, where a dynamic import would wrap each of its modules in a lazy initializer (about
 * 400 B gzipped, and nothing to load later).
 */
const LATER = /import\('\.\/(record|auto|presence|connection)'\)/g
const laterInside: BunPlugin = {
  name: 'later-inside',
  setup(build) {
    build.onLoad({ filter: /tracker[\\/]src[\\/]index\.ts$/ }, async ({ path }) => {
      const source = await Bun.file(path).text()
      const modules = [...new Set(Array.from(source.matchAll(LATER), (match) => match[1]))]
      if (modules.length !== 4) throw new Error(`${path}: the modules imported later are not the ones this build expects`)
      const imports = modules.map((name) => `import * as later_${name} from './${name}'\n`).join('')
      // At the end, where an import declaration means the same: the lines of the source map stay the source's.
      return { contents: source.replace(LATER, (_, name) => `Promise.resolve(later_${name})`) + '\n' + imports, loader: 'ts' }
    })
  },
}

async function bundle(options: Parameters<typeof Bun.build>[0]) {
  const result = await Bun.build(options)
  if (!result.success) throw new AggregateError(result.logs, 'tracker build failed')
  return result.outputs
}

/**
 * A browser bundle, minified by Bun and then by terser, which inlines and folds more (about 5 % less
 * gzipped) and shortens INTERNAL_NAMES (`nameCache`: the same short names in bundles that meet); its
 * source map still leads to the sources. A linked map gets its `sourceMappingURL` comment back.
 */
async function browserBundle(options: Parameters<typeof Bun.build>[0] & { sourcemap: 'linked' | 'external' }, nameCache: object = {}) {
  for (const output of await bundle(options)) {
    if (output.kind !== 'entry-point') continue
    const map = output.path + '.map'
    const minified = await minify(await Bun.file(output.path).text(), {
      module: options.format === 'esm',
      ecma: 2020,
      compress: { passes: 3 },
      mangle: { properties: { regex: internalName, builtins: true } },
      nameCache,
      sourceMap: { content: await Bun.file(map).text(), url: options.sourcemap === 'linked' ? basename(map) : undefined },
    })
    await Bun.write(output.path, minified.code!)
    await Bun.write(map, minified.map as string)
  }
}

export async function buildTracker(outdir = DIST) {
  await rm(outdir, { recursive: true, force: true })
  const browser = { target: 'browser', format: 'esm', minify: true, sourcemap: 'linked', plugins: [withoutUnusedRrweb] } satisfies Partial<Bun.BuildConfig>
  const esm = join(outdir, 'esm')
  const names = {}
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/index.ts')], outdir: esm, plugins: [startedApart] }, names)
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/record.ts')], outdir: esm }, names)
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/auto/index.ts')], outdir: esm, naming: 'auto.js' }, names)
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/presence.ts')], outdir: esm }, names)
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/connection.ts')], outdir: esm }, names)
  // `@sightline/tracker/user-auth`: imported by an app where it signs users in, apart from the tracker.
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/user-auth.ts')], outdir: esm }, names)
  // The relay serves t.js alone: no sourceMappingURL comment pointing at a file it does not serve.
  await browserBundle({ ...browser, entrypoints: [join(root, 'src/browser.ts')], outdir, format: 'iife', naming: 't.js', sourcemap: 'external', plugins: [withoutUnusedRrweb, laterInside] })
  await bundle({
    entrypoints: [join(root, 'bin/upload-sourcemaps.ts')],
    outdir: join(outdir, 'bin'),
    target: 'node',
    format: 'esm',
    naming: 'upload-sourcemaps.js',
    banner: '#!/usr/bin/env node',
  })
  const types = Bun.spawnSync([process.execPath, 'x', 'tsc', '-p', join(root, 'tsconfig.build.json'), '--outDir', join(outdir, 'types')], {
    stdout: 'inherit',
    stderr: 'inherit',
  })
  if (types.exitCode !== 0) throw new Error('tracker type declarations failed')
  await checkInternalNames(outdir)
}

if (import.meta.main) await buildTracker()
