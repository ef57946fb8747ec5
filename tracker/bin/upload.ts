import { readdir, readFile, realpath, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

export const USAGE = `usage: upload-sourcemaps --release R --api-key K [--url BASE] DIR

Uploads every .map file under DIR, and every map inlined in a script under DIR as a data: URL,
to BASE/api/ingestion/sourcemaps for release R, so that error stacks of that release are mapped
back to the original sources.

  --release R    the release the bundles were built as (the tracker's \`release\` option)
  --api-key K    the project's ingestion key (or SIGHTLINE_API_KEY)
  --url BASE     the service or relay base (or SIGHTLINE_URL; default http://localhost:8000)
`

export const DEFAULT_URL = 'http://localhost:8000'
/** Attempts per file; network errors, 408 and 5xx are retried with backoff (honouring Retry-After). */
export const UPLOAD_ATTEMPTS = 4
const RETRY_BASE_MS = 500
/**
 * A service or proxy that takes the request and never answers would hold a deploy's CI job until its
 * own limit: an attempt that takes longer fails as a network error would, and is retried. Two
 * minutes sends the 5 MB that the service takes by default over a link of a megabit.
 */
export const UPLOAD_TIMEOUT_MS = 120_000

export interface UploadIo {
  fetch: (input: string, init: RequestInit) => Promise<Response>
  out: { write(text: string): unknown; isTTY?: boolean }
  err: { write(text: string): unknown }
  env: Record<string, string | undefined>
  sleep: (ms: number) => Promise<unknown>
  /** How long one attempt may take, answer included; UPLOAD_TIMEOUT_MS unless given. */
  timeoutMs?: number
}

class UsageError extends Error {}

interface Args {
  release: string
  apiKey: string
  url: string
  dir: string
}

function parse(argv: string[], env: UploadIo['env']): Args {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { release: { type: 'string' }, 'api-key': { type: 'string' }, url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help) throw new UsageError('')
  const release = values.release ?? ''
  const apiKey = values['api-key'] ?? env.SIGHTLINE_API_KEY ?? ''
  if (!release) throw new UsageError('--release is required')
  if (!apiKey) throw new UsageError('--api-key (or SIGHTLINE_API_KEY) is required')
  if (positionals.length !== 1) throw new UsageError('give exactly one directory')
  const url = (values.url ?? env.SIGHTLINE_URL ?? DEFAULT_URL).replace(/\/+$/, '')
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be an http(s) URL, not "${url}"`)
  return { release, apiKey, url, dir: positionals[0] }
}

/** A map to upload: its name (a path under DIR with forward slashes) and its JSON. */
export interface FoundSourceMap {
  name: string
  read(): Promise<Uint8Array<ArrayBuffer>>
}

const SCRIPT = /\.[cm]?js$/

/** The JSON of the last `//# sourceMappingURL=data:...` comment of a script; null without one. */
export function inlineSourceMap(script: string): string | null {
  // Only spaces and tabs before the comment: whitespace that crossed lines made each blank line rescan all that follow.
  const [, base64, data] = [...script.matchAll(/^[ \t]*\/\/[#@]\s*sourceMappingURL=data:application\/json[^,]*?(;base64)?,(\S+)\s*$/gm)].at(-1) ?? []
  if (data === undefined) return null
  try {
    return base64 ? Buffer.from(data, 'base64').toString('utf8') : decodeURIComponent(data)
  } catch {
    return null
  }
}

/**
 * The files under `dir`, as paths under it with forward slashes. Symbolic links are followed, to
 * files and folders alike (a build may link in another's output), and each real folder is walked
 * once, so a link back up the tree ends. readdir's own `recursive` would not do: Node's follows no
 * link (a linked map was left out), Bun's follows folder links round a loop until ELOOP failed it all.
 */
async function filesUnder(dir: string): Promise<string[]> {
  const files: string[] = []
  const walked = new Set<string>()
  const walk = async (folder: string, prefix: string) => {
    const real = await realpath(folder)
    if (walked.has(real)) return
    walked.add(real)
    const entries = (await readdir(real, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const path = join(real, entry.name)
      // A dangling link is no file to upload.
      const target = entry.isSymbolicLink() ? await stat(path).catch(() => null) : entry
      if (target?.isDirectory()) await walk(path, `${prefix}${entry.name}/`)
      else if (target?.isFile()) files.push(`${prefix}${entry.name}`)
    }
  }
  await walk(dir, '')
  return files
}

/**
 * Every `.map` file under `dir`, and the maps inlined in its scripts (bundlers' `inline` source
 * maps), each named `<script>.map`, as the service matches maps to scripts by that name; sorted.
 */
export async function findSourceMaps(dir: string): Promise<FoundSourceMap[]> {
  const names = await filesUnder(dir)
  const files = new Set(names)
  const found: FoundSourceMap[] = names.filter((name) => name.endsWith('.map')).map((name) => ({ name, read: () => readFile(join(dir, name)) }))
  for (const script of names.filter((name) => SCRIPT.test(name) && !files.has(`${name}.map`))) {
    const inline = inlineSourceMap(await readFile(join(dir, script), 'utf8'))
    if (inline !== null) found.push({ name: `${script}.map`, read: async () => Buffer.from(inline) })
  }
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** Why an answer failed, from WIRE.md's error shape when there is one. */
async function reasonOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '')
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } }
    if (body.error) return `${response.status} ${body.error.code}: ${body.error.message}`
  } catch {}
  return `${response.status} ${text.slice(0, 200)}`.trim()
}

const transient = (status: number) => status === 408 || status >= 500

async function uploadOne(args: Args, { name, read }: FoundSourceMap, io: UploadIo): Promise<string | null> {
  let content: Uint8Array<ArrayBuffer>
  try {
    content = await read()
  } catch (error) {
    // Gone or unreadable since it was listed (a build still writing, say): this map fails, not the run.
    return `cannot read it: ${(error as Error).message}`
  }
  let failure = ''
  let wait = 0
  for (let attempt = 0; attempt < UPLOAD_ATTEMPTS; attempt++) {
    if (attempt) await io.sleep(wait || RETRY_BASE_MS * 2 ** (attempt - 1))
    const form = new FormData()
    form.append('release', args.release)
    form.append('file', new Blob([content], { type: 'application/json' }), name)
    let response: Response
    try {
      const signal = AbortSignal.timeout(io.timeoutMs ?? UPLOAD_TIMEOUT_MS)
      response = await io.fetch(`${args.url}/api/ingestion/sourcemaps`, { method: 'POST', headers: { authorization: `Bearer ${args.apiKey}` }, body: form, signal })
      if (!response.ok) failure = await reasonOf(response)
    } catch (error) {
      failure = `network error: ${(error as Error).message}`
      wait = 0
      continue
    }
    if (response.ok) return null
    if (response.status === 413) return `${failure} (this map is ${content.byteLength} bytes; the service's operator can raise its MAX_UPLOAD_BODY_BYTES)`
    if (!transient(response.status)) return failure
    wait = Math.min(Number(response.headers.get('retry-after')) || 0, 60) * 1000
  }
  return `${failure} (after ${UPLOAD_ATTEMPTS} attempts)`
}

function progress(io: UploadIo, done: number, total: number, name: string, failed: boolean) {
  const mark = failed ? 'failed' : 'ok'
  if (!io.out.isTTY) return void io.out.write(`[${done}/${total}] ${name} ${mark}\n`)
  const width = 24
  const filled = Math.round((done / total) * width)
  io.out.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${name}\x1b[K`)
  if (done === total) io.out.write('\n')
}

/** The command: 0 when every map is stored, 1 when any failed, 2 on a usage error. */
export async function uploadSourcemaps(argv: string[], io: UploadIo): Promise<number> {
  let args: Args
  try {
    args = parse(argv, io.env)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    if (!error.message) {
      io.out.write(USAGE)
      return 0
    }
    io.err.write(`upload-sourcemaps: ${error.message}\n\n${USAGE}`)
    return 2
  }
  let maps: FoundSourceMap[]
  try {
    maps = await findSourceMaps(args.dir)
  } catch (error) {
    io.err.write(`upload-sourcemaps: cannot read ${args.dir}: ${(error as Error).message}\n`)
    return 1
  }
  if (!maps.length) {
    io.err.write(`upload-sourcemaps: no .map files or inline source maps under ${args.dir}\n`)
    return 1
  }
  const failures: string[] = []
  for (const [index, map] of maps.entries()) {
    const failure = await uploadOne(args, map, io)
    if (failure) failures.push(`${map.name}: ${failure}`)
    progress(io, index + 1, maps.length, map.name, !!failure)
  }
  if (failures.length) {
    io.err.write(`upload-sourcemaps: ${failures.length} of ${maps.length} source maps failed to upload:\n${failures.map((f) => `  ${f}\n`).join('')}`)
    return 1
  }
  io.out.write(`uploaded ${maps.length} source map${maps.length === 1 ? '' : 's'} for release ${args.release} to ${args.url}\n`)
  return 0
}
