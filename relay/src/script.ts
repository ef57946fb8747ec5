import { errorResponse } from './errors.ts'

/**
 * The tracker's browser bundle served from the relay's own prefix, so the script is first-party
 * too. The operator hands it over as text, bytes or a file; the relay never reaches for the
 * repository's tracker build itself.
 */

export type ScriptOptions = ScriptSource & {
  /** File name under the prefix; default "t.js". */
  name?: string
  /** `Cache-Control` max-age in seconds; default 300. The URL carries no version, so keep it short: the ETag makes revalidation cheap. */
  maxAgeSeconds?: number
}

/**
 * The bundle's text or bytes, or the file to read once, when the relay is created: a path (a
 * relative one is read from the working directory) or a `file:` URL, which is what
 * `import.meta.resolve('@sightline/tracker/t.js')` gives wherever the server was started from.
 * A file is read with `node:fs`, which Bun, Deno and Node all provide.
 */
export type ScriptSource = { source: string | Uint8Array; path?: never } | { path: string | URL; source?: never }

export interface ServedScript {
  /** "/t.js" */
  path: string
  /** Settles once the script is read and compressed; rejects, saying why, when it cannot be served. */
  ready: Promise<void>
  respond(request: Request): Promise<Response>
}

/** One encoding of the bundle as it goes out. */
interface Variant {
  bytes: Uint8Array<ArrayBuffer>
  etag: string
  encoding: 'gzip' | null
}

interface Variants {
  identity: Variant
  /** Absent when gzip would not make it smaller. */
  gzip: Variant | null
}

/**
 * The variant whose tag `If-None-Match` lists (weak comparison, RFC 9110 §13.1.2), `selected` for
 * "*", or null. A client holds the variant it was sent: its tag decides, whichever would be sent now,
 * and the 304 names that tag so the client's cache refreshes what it has (RFC 9111 §4.3.4).
 */
function cachedVariant(header: string | null, selected: Variant, { identity, gzip }: Variants): Variant | null {
  if (!header) return null
  if (header.trim() === '*') return selected
  const tags = header.split(',').map((tag) => tag.trim().replace(/^W\//, ''))
  return [selected, identity, gzip].find((variant) => variant && tags.includes(variant.etag)) ?? null
}

/** Whether `Accept-Encoding` admits gzip (RFC 9110 §12.5.3): named with a weight above 0, or else covered by "*". */
function acceptsGzip(header: string | null): boolean {
  if (!header) return false
  let wildcard = false
  for (const item of header.split(',')) {
    const [coding, ...parameters] = item.split(';')
    const name = coding.trim().toLowerCase()
    const weight = parameters.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='))
    // A weight that is not a number admits nothing.
    const admitted = weight === undefined || Number(weight.slice(2)) > 0
    if (name === 'gzip' || name === 'x-gzip') return admitted
    if (name === '*') wildcard = admitted
  }
  return wildcard
}

async function load(script: ScriptSource): Promise<Uint8Array<ArrayBuffer>> {
  if (script.source !== undefined) return typeof script.source === 'string' ? new TextEncoder().encode(script.source) : new Uint8Array(script.source)
  const { readFile } = await import('node:fs/promises')
  const { resolve } = await import('node:path')
  const { path } = script
  // Resolved here so that the error names the file that was looked for, not only what was written.
  const file = path instanceof URL ? path : path.startsWith('file:') ? new URL(path) : resolve(path)
  return new Uint8Array(await readFile(file))
}

async function etagOf(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
  let hex = ''
  for (let i = 0; i < 12; i++) hex += digest[i].toString(16).padStart(2, '0')
  return `"${hex}"`
}

/** Compressed once, with the Web-standard stream every runtime the relay supports has. */
async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const compressed = new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'))
  return new Uint8Array(await new Response(compressed).arrayBuffer())
}

async function variantsOf(bytes: Uint8Array<ArrayBuffer>): Promise<Variants> {
  const identity: Variant = { bytes, etag: await etagOf(bytes), encoding: null }
  const compressed = await gzip(bytes)
  if (compressed.byteLength >= bytes.byteLength) return { identity, gzip: null }
  // Tagged by its own bytes: a strong ETag names exactly one representation.
  return { identity, gzip: { bytes: compressed, etag: await etagOf(compressed), encoding: 'gzip' } }
}

/** Serves the script as `<prefix>/<name>`; the prefix only names it in what the relay reports. */
export function serveScript({ name = 't.js', maxAgeSeconds = 300, ...script }: ScriptOptions, prefix = ''): ServedScript {
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) throw new TypeError(`script name "${name}" is not a plain file name`)
  // RFC 9111 §1.2.2: max-age is delta-seconds, 1*DIGIT; "max-age=1.5" or "=-1" is no directive a cache honours.
  if (!Number.isSafeInteger(maxAgeSeconds) || maxAgeSeconds < 0) throw new TypeError(`script maxAgeSeconds must be a whole number of seconds, not ${String(maxAgeSeconds)}`)
  // Read, hashed and compressed once, as the relay is created. A file that cannot be read is said at
  // once on stderr (and by `ready`) rather than only when a page asks for it; the relay itself keeps
  // running and answers 404 for the script.
  const loaded = load(script as ScriptSource).then(variantsOf)
  const ready = loaded.then(
    () => {},
    (error: Error) => {
      throw new Error(`relay: ${prefix}/${name} cannot be served and answers 404: ${error.message}`, { cause: error })
    },
  )
  ready.catch((error: Error) => console.error(error.message))
  const cacheControl = `public, max-age=${maxAgeSeconds}, stale-while-revalidate=86400`

  return {
    path: `/${name}`,
    ready,
    async respond(request) {
      const variants = await loaded.catch(() => null)
      if (!variants) return errorResponse('not_found', `the script ${name} could not be read`)
      const { identity, gzip } = variants
      const selected = gzip && acceptsGzip(request.headers.get('accept-encoding')) ? gzip : identity
      // Either variant may be what a cache holds; both are the same script.
      const cached = cachedVariant(request.headers.get('if-none-match'), selected, variants)
      const common = { etag: (cached ?? selected).etag, 'cache-control': cacheControl, vary: 'Accept-Encoding' }
      if (cached) return new Response(null, { status: 304, headers: common })
      const headers: Record<string, string> = {
        ...common,
        'content-type': 'text/javascript; charset=utf-8',
        'content-length': String(selected.bytes.byteLength),
        'x-content-type-options': 'nosniff',
        // Any page of the site (or another origin of the operator) may load it.
        'cross-origin-resource-policy': 'cross-origin',
      }
      if (selected.encoding) headers['content-encoding'] = selected.encoding
      return new Response(request.method === 'HEAD' ? null : selected.bytes, { status: 200, headers })
    },
  }
}
