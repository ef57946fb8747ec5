import { createHash } from 'node:crypto'
import { stripQuery } from '../sourcemaps/service'

/**
 * Grouping of error reports into Issues. Whatever varies between two sightings of the same bug is
 * left out: release hashes in file names, query strings, hosts, line and column numbers, engine
 * differences in how function names are written, numbers and ids in messages.
 */

/** The parts of a frame that grouping reads: after symbolication, the original ones. */
export interface GroupingFrame {
  file: string
  function: string
  inApp: boolean
  /** The file is the served (generated) one, not a source file a source map led to. */
  generated: boolean
  /** The function name can be trusted across releases: from a source map, or from unminified code. */
  readable: boolean
}

const NOT_APP = [
  // Also at the start: a map beside node_modules names its dependencies' sources `node_modules/...`.
  /(?:^|\/)node_modules\//,
  /^(?:chrome|moz|safari|safari-web|ms-browser)-extension:/,
  /^webkit-masked-url:/,
  /^(?:node|bun|native|internal)(?::|\/|$)/,
  /^\[native code\]$/,
  /^<anonymous>$/,
  /^(?:index \d+|native|unknown)$/,
]

/** Frames of the product's own code; the browser's, extensions' and dependencies' are not. */
export const isInApp = (file: string): boolean => file !== '' && !NOT_APP.some((pattern) => pattern.test(file))

/**
 * A build hash rather than a name: hex of 8+ (`3f2a1b9c`), letters and digits of 8+ (`hctsbpa5`),
 * Rollup's 8 characters of mixed case (`DiwrgTda`), or esbuild's 8 of base32 (`A-Z2-7`), which hold
 * no digit one build in five (`QWERTYUI`). Only generated files are read this way: a source file
 * may well be called `UserProfile`. Capitals alone are read as esbuild's hash only where esbuild
 * puts one, after a name and `-` (`chart-QWERTYUI.js`): a folder or a whole name of eight capitals
 * (`/CHECKOUT/app.js`) is a person's word, and dropping it would make one file of many.
 */
const looksLikeHash = (token: string, afterName = false): boolean =>
  /^[A-Za-z0-9_]{8,}$/.test(token) &&
  (/^[0-9a-f]+$/i.test(token) ||
    (/\d/.test(token) && /[A-Za-z]/.test(token)) ||
    (token.length === 8 && /[a-z]/.test(token) && /[A-Z]/.test(token)) ||
    (afterName && /^[A-Z2-7]{8}$/.test(token)))

const isVersion = (segment: string) => /^v?\d+(?:\.\d+)+(?:[-+][\w.]+)?$/.test(segment)

/**
 * Rollup's (and so Vite's) `[name]-[hash]`: 8 characters of URL-safe base64, which may hold `-`
 * themselves (`index-D-XbHvJo.js`, one build in eight), so splitting at `-` alone leaves pieces too
 * short to read as a hash, and the file name then changes with every build. The tail is read as a
 * hash as a whole, its `-` taken for `_` (what else may be in one).
 */
const withoutRollupHash = (part: string) => part.replace(/-([\w-]{8})$/, (tail, token: string) => (token.includes('-') && looksLikeHash(token.replaceAll('-', '_'), true) ? '' : tail))

const withoutHashes = (part: string) =>
  withoutRollupHash(part)
    .split('-')
    .filter((token, i) => !looksLikeHash(token, i > 0) && !/^\d+$/.test(token))
    .join('-')

/**
 * A file as grouping sees it: no scheme, host, query or fragment; no leading `./` or `../`; no
 * bundler prefix (`webpack://app/`). For a generated (served) file, build hashes and version
 * directories are dropped too, so that `https://cdn.example/v1.4.2/assets/app.3f2a1b9c.js?x=1`
 * and `/assets/app.77e0d1aa.js` agree.
 */
export function normalizeFile(file: string, generated: boolean): string {
  // A script the page made itself (a worker's, `blob:https://shop.example/<uuid>`) is named by an id
  // new on every page load: all of them are one file to grouping, told apart by their functions.
  if (/^blob:/i.test(file)) return 'blob'
  let path = stripQuery(file)
  path = path.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').replace(/^[a-z][a-z0-9+.-]*:/i, '')
  const segments = path.split('/').filter((s) => s !== '' && s !== '.' && s !== '..' && s !== '~')
  if (!generated) return segments.join('/')
  const name = (segments.pop() ?? '')
    .split('.')
    .map((part, i, parts) => (i === parts.length - 1 ? part : withoutHashes(part)))
    .filter(Boolean)
    .join('.')
  return [...segments.filter((s) => !isVersion(s) && !looksLikeHash(s)), name].join('/')
}

/**
 * A function name as grouping sees it, the same from every engine: V8's `Cart.total`,
 * `async Cart.total`, `new Cart` and `Object.<anonymous>`; Firefox's `total/<` (anonymous inside
 * total) and `outer/inner`; Safari's `global code`.
 */
export function normalizeFunction(name: string): string {
  let fn = withoutAlias(name.trim().replace(/^(?:async|new)\s+/, ''))
  if (/^(?:global|eval|module) code$/.test(fn) || fn === '<anonymous>' || fn.endsWith('<')) return ''
  fn = fn.split('/').filter(Boolean).pop() ?? ''
  fn = fn.split('.').filter(Boolean).pop() ?? ''
  return fn === '<anonymous>' ? '' : fn.replace(/[<>*]/g, '')
}

/**
 * Without V8's ` [as alias]` suffix. By hand: /\s*\[as [^\]]*\]$/ is tried from every blank of a
 * run of them and scans to the end of the name from each, quadratic in the run (a report's frames
 * name their functions as they like, a kilobyte each).
 */
function withoutAlias(fn: string): string {
  if (!fn.endsWith(']')) return fn
  const alias = fn.indexOf('[as ', fn.lastIndexOf(']', fn.length - 2) + 1)
  return alias === -1 ? fn : fn.slice(0, alias).trimEnd()
}

/** A name a minifier made (`e`, `Module.a`, `async Gt`), not one a person wrote: one or two characters once normalized. */
export const looksMinifiedFunction = (name: string): boolean => /^[\w$]{1,2}$/.test(normalizeFunction(name))

/**
 * Numbers, hex ids, UUIDs, ids of letters and digits (`cus_NffrFeUfNV2Hib`, `K7XP2Q`), URLs and
 * e-mail addresses masked, so one message template stays one group.
 * A URL's scheme and an address's local part are matched as a whole run that is kept when no `://`
 * or `@...` follows it: /[\w.+-]+@.../ was tried again from every character of a run, each time to
 * its end, quadratic in it (a 2 KB message took 3 ms, a batch of them a third of a second). Every
 * start within a run ends where the run does, so what is masked is the same.
 */
export function maskMessage(message: string): string {
  return message
    .slice(0, 2048)
    .replace(/\b[a-z][a-z0-9+.-]*(:\/\/\S+)?/gi, (run, url) => (url ? '<url>' : run))
    .replace(/[\w.+-]+(@[\w-]+(?:\.[\w-]+)+)?/g, (run, address) => (address ? '<email>' : run))
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<hex>')
    .replace(/(?<![A-Za-z0-9_-])([A-Za-z]{2,}[_-])([A-Za-z0-9]{6,})(?![A-Za-z0-9_-])/g, (token, prefix: string, tail: string) =>
      isPrefixedIdTail(tail) ? `${prefix}<id>` : token,
    )
    .replace(/(?<![A-Za-z0-9])[A-Za-z0-9]{5,}(?![A-Za-z0-9])/g, (token) => (looksLikeIdToken(token) ? '<id>' : token))
    .replace(/\d+(?:\.\d+)?/g, '<n>')
    .trim()
}

/**
 * The tail of a prefixed id (Stripe's `cus_NffrFeUfNV2Hib`, `ord_9f8e7d6c5b`): letters and digits
 * both. The prefix says what kind of id it is and stays. An error code's tail is capitals with a
 * number after them (`ERR_HTTP2`, `ERR_TLS13`) and stays too.
 */
const isPrefixedIdTail = (tail: string): boolean => /\d/.test(tail) && /[A-Za-z]/.test(tail) && !/^[A-Z]+\d+$/.test(tail)

/**
 * A code or id written as one word of letters and digits: capitals and digits mixed (`K7XP2Q`), or
 * any case switching between letters and digits four times and more (`V1StGXR8Z5jd`). What stays is
 * a word with a number in it or after it, which names a thing rather than one of many: codes
 * (`E11000`, `HTTP2`, `ES2015`, `SHA256`, `404NOTFOUND`) and names (`Uint8Array`, `utf8mb4`, `i18n`).
 */
function looksLikeIdToken(token: string): boolean {
  if (!/\d/.test(token) || !/[A-Za-z]/.test(token)) return false
  if (/^[A-Z0-9]+$/.test(token)) return !/^(?:[A-Z]+\d+|\d+[A-Z]+)$/.test(token)
  return (token.match(/\d(?=\D)|\D(?=\d)/g)?.length ?? 0) >= 4
}

export interface FingerprintInput {
  name: string
  message: string
  frames: readonly GroupingFrame[]
  /** The client's own fingerprint; `{{ default }}` in it stands for the one computed here. */
  clientFingerprint?: readonly string[] | null
}

/**
 * The grouping key of a report, as the parts it was made of.
 *
 * Only the innermost in-app frame takes part: Safari runs strict-mode code with proper tail calls,
 * so a function that ends in `return next(x)` is missing from its stacks while Chrome and Firefox
 * show it; a deeper prefix of the stack would split one bug into an Issue per engine. When even
 * that frame is unreadable (minified, no source map), the file alone is too coarse, so the masked
 * message joins it.
 */
export function fingerprintParts({ name, message, frames, clientFingerprint }: FingerprintInput): string[] {
  const computed = defaultParts(name, message, frames)
  // `["{{ default }}"]` alone asks for the computed grouping (Sentry's SDKs send it so): the same
  // Issue as a report without a fingerprint, not one apart under the `client` parts.
  if (!clientFingerprint?.length || (clientFingerprint.length === 1 && isDefault(clientFingerprint[0]))) return computed
  if (clientFingerprint.length <= CLIENT_PARTS && clientFingerprint.every((part) => part.length <= CLIENT_PART_CHARS)) {
    return ['client', ...clientFingerprint.flatMap((part) => (isDefault(part) ? computed : [part]))]
  }
  // A longer list is neither cut nor set aside for the computed grouping: cutting would merge
  // reports the client told apart past the cut, and the computed grouping would split or merge
  // them otherwise than the client asked. It counts whole, as one digest of every entry, with
  // `{{ default }}` standing once for the computed parts rather than being copied at each place
  // (a body of nothing but `{{ default }}` would otherwise grow some hundredfold). Lists within the
  // bounds keep the parts they always had, so no Issue of theirs moves.
  const listed = JSON.stringify(clientFingerprint.map((part) => (isDefault(part) ? null : part)))
  return ['client digest', createHash('sha256').update(listed).digest('hex'), ...(clientFingerprint.some(isDefault) ? computed : [])]
}

/** The client fingerprints read entry by entry; longer ones are grouped by a digest (see fingerprintParts). */
const CLIENT_PARTS = 32
const CLIENT_PART_CHARS = 512
const isDefault = (part: string) => /^\{\{\s*default\s*\}\}$/.test(part)

function defaultParts(name: string, message: string, frames: readonly GroupingFrame[]): string[] {
  const errorName = errorNameOf(name)
  const top = topFrame(frames)
  if (!top) return ['message', errorName, maskMessage(message)]
  return top.function ? ['stack', errorName, top.function, top.file] : ['stack', errorName, top.file, maskMessage(message)]
}

/** A report's error name as it is grouped and stored: blank is `Error`. */
export const errorNameOf = (name: string): string => name.trim() || 'Error'

/**
 * The innermost in-app frame as grouping reads it, which also names an Issue's culprit: its file
 * normalized, and its function normalized when the name can be trusted ('' otherwise).
 */
export function topFrame(frames: readonly GroupingFrame[]): { file: string; function: string } | undefined {
  const top = frames.find((frame) => frame.inApp)
  if (!top) return undefined
  return { file: normalizeFile(top.file, top.generated), function: top.readable ? normalizeFunction(top.function) : '' }
}

/** The fingerprint as stored: a hash, so that any length of parts indexes the same. */
export const fingerprintOf = (parts: readonly string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('hex')

/**
 * The Issue's id follows from project and fingerprint (a name-based UUID, RFC 9562 version 5
 * layout), so every process computes the same one without asking the database, and a report's
 * answer can name its Issue before the commit that creates it.
 */
export function issueIdOf(projectId: string, fingerprint: string): string {
  const hash = createHash('sha1').update(`${projectId.toLowerCase()}\n${fingerprint}`).digest()
  hash[6] = (hash[6] & 0x0f) | 0x50
  hash[8] = (hash[8] & 0x3f) | 0x80
  const hex = hash.subarray(0, 16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
