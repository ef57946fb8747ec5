import { errorResponse } from './errors.ts'

/**
 * The tracker's browser bundle served from the relay's own prefix, so the script is first-party
 * too. The operator hands it over as text, bytes or a file path; the relay never reaches for the
 * repository's tracker build itself.
 */

export type ScriptOptions = ScriptSource & {
  /** File name under the prefix; default "t.js". */
  name?: string
  /** `Cache-Control` max-age in seconds; default 300. The URL carries no version, so keep it short: the ETag makes revalidation cheap. */
  maxAgeSeconds?: number
}

/**
 * The bundle's text or bytes, or the path of a file to read once (server runtimes only: it is read
 * with `node:fs`, which Bun, Deno and Node all provide).
 */
export type ScriptSource = { source: string | Uint8Array; path?: never } | { path: string; source?: never }

export interface ServedScript {
  /** "/t.js" */
  path: string
  respond(request: Request): Promise<Response>
}

/** `If-None-Match` matches when it lists our tag (weak comparison, RFC 9110 §13.1.2) or is "*". */
export function ifNoneMatchHits(header: string | null, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const ours = etag.replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === ours)
}

async function load(script: ScriptSource): Promise<Uint8Array> {
  if (script.source !== undefined) return typeof script.source === 'string' ? new TextEncoder().encode(script.source) : script.source
  const { readFile } = await import('node:fs/promises')
  return new Uint8Array(await readFile(script.path))
}

async function etagOf(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>))
  let hex = ''
  for (let i = 0; i < 12; i++) hex += digest[i].toString(16).padStart(2, '0')
  return `"${hex}"`
}

export function serveScript({ name = 't.js', maxAgeSeconds = 300, ...script }: ScriptOptions): ServedScript {
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) throw new TypeError(`script name "${name}" is not a plain file name`)
  // Loaded and hashed once, at start; a file that cannot be read answers 404 rather than crashing.
  const loaded = load(script as ScriptSource).then(async (bytes) => ({ bytes, etag: await etagOf(bytes) }))
  loaded.catch(() => {})
  const cacheControl = `public, max-age=${maxAgeSeconds}, stale-while-revalidate=86400`

  return {
    path: `/${name}`,
    async respond(request) {
      const script = await loaded.catch(() => null)
      if (!script) return errorResponse('not_found', `the script ${name} could not be read`)
      const { bytes, etag: tag } = script
      const headers = {
        etag: tag,
        'cache-control': cacheControl,
        'content-type': 'text/javascript; charset=utf-8',
        'x-content-type-options': 'nosniff',
        // Any page of the site (or another origin of the operator) may load it.
        'cross-origin-resource-policy': 'cross-origin',
      }
      if (ifNoneMatchHits(request.headers.get('if-none-match'), tag)) return new Response(null, { status: 304, headers })
      const body = request.method === 'HEAD' ? null : (bytes as Uint8Array<ArrayBuffer>)
      return new Response(body, { status: 200, headers: { ...headers, 'content-length': String(bytes.byteLength) } })
    },
  }
}
