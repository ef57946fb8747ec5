import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { serveRelay } from './adapters/bun.ts'
import { serveStandalone } from './standalone/serve.ts'
import type { KeyInBody } from './headers.ts'
import { normalizePrefix } from './paths.ts'
import { fetchClient } from './upstream/fetch.ts'

/**
 * Standalone mode, for operators who want a process rather than a module:
 *   npm run relay -- --upstream http://127.0.0.1:8000 --prefix /_sl --port 8080
 * The tracker bundle is served from `--script` (default: this checkout's `tracker/dist/t.js` when
 * it has been built, wherever the command is run from). It is read before the port is opened, so a
 * file that cannot be read stops the relay at once instead of answering 404 to every page.
 */
const USAGE = `usage: npm run relay -- --upstream URL [--prefix /_sl] [--port 8080] [--host 0.0.0.0]
       [--script FILE] [--script-name t.js] [--key-in-body auto|always|never]
       [--max-body-bytes N] [--timeout-ms N] [--max-connections N] [--max-queued N]
       [--server own|bun] [--client socket|fetch]`

/** How long a stop waits for the requests under way (a deploy, `docker stop`) before it cuts them. */
const STOP_GRACE_MS = 10_000

function fail(message: string): never {
  process.stderr.write(`relay: ${message}\n${USAGE}\n`)
  process.exit(2)
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        upstream: { type: 'string' },
        prefix: { type: 'string', default: '/_sl' },
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '0.0.0.0' },
        script: { type: 'string' },
        'script-name': { type: 'string', default: 't.js' },
        'key-in-body': { type: 'string', default: 'auto' },
        'max-body-bytes': { type: 'string' },
        'timeout-ms': { type: 'string' },
        'max-connections': { type: 'string' },
        'max-queued': { type: 'string' },
        // What serves the clients: the relay's own HTTP/1.1 server (default), or Bun.serve with the relay
        // as its handler, as the Bun adapter mounts it (kept to compare against, and as a fallback).
        server: { type: 'string', default: 'own' },
        // How to reach core: pooled sockets (default), or the runtime's fetch (on Bun.serve only).
        client: { type: 'string', default: 'socket' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    fail((error as Error).message)
  }
})()

if (values.help) {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
if (!values.upstream) fail('--upstream is required')
const keyInBody = values['key-in-body'] as KeyInBody
if (!['auto', 'always', 'never'].includes(keyInBody)) fail('--key-in-body is auto, always or never')
if (values.client !== 'socket' && values.client !== 'fetch') fail('--client is socket or fetch')
if (values.server !== 'own' && values.server !== 'bun') fail('--server is own or bun')
if (values.server === 'own' && values.client === 'fetch') fail('--client fetch needs --server bun: the own server forwards on pooled sockets')
/**
 * Plain decimal digits only: `Number` reads "" and " " as 0 (`--max-body-bytes=$UNSET` refused every
 * body with 413, `--port=$UNSET` listened on a random port) and takes "0x1f90" and "1e6" as well.
 */
const number = (name: string, value: string | undefined, max = Number.MAX_SAFE_INTEGER) => {
  if (value === undefined) return undefined
  const n = /^\d+$/.test(value) ? Number(value) : NaN
  if (!(n <= max)) fail(`--${name} must be a whole number${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}`)
  return n
}
/** The largest TCP port: past it Bun.serve throws, which was reported as a failure to listen (exit 1, no usage). */
const MAX_PORT = 65_535
const BUILT_SCRIPT = fileURLToPath(new URL('../../tracker/dist/t.js', import.meta.url))
const scriptPath = values.script ?? (existsSync(BUILT_SCRIPT) ? BUILT_SCRIPT : undefined)
const scriptSource = (() => {
  if (scriptPath === undefined) return undefined
  try {
    return readFileSync(scriptPath)
  } catch (error) {
    fail(`--script ${scriptPath} cannot be read: ${(error as Error).message}`)
  }
})()

try {
  const limits = { maxConnections: number('max-connections', values['max-connections']), maxQueued: number('max-queued', values['max-queued']) }
  const options = {
    upstream: values.upstream,
    prefix: values.prefix!,
    port: number('port', values.port, MAX_PORT),
    hostname: values.host,
    keyInBody,
    maxBodyBytes: number('max-body-bytes', values['max-body-bytes']),
    timeoutMs: number('timeout-ms', values['timeout-ms']),
    ...limits,
    script: scriptSource ? { source: scriptSource, name: values['script-name'] } : undefined,
  }
  const server = values.server === 'own' ? serveStandalone(options) : serveRelay({ ...options, ...(values.client === 'fetch' && { client: fetchClient(limits) }) })
  // Said as the relay serves it: `--prefix _sl/` is /_sl, and printed as given it named the script
  // `_sl//t.js`, a src that page would have copied and that the relay answers 404.
  const prefix = normalizePrefix(values.prefix!)
  const script = scriptPath ? `, script ${prefix}/${values['script-name']} from ${scriptPath}` : ', no script'
  process.stdout.write(`relay: listening on ${server.url} -> ${values.upstream}, prefix ${prefix || '/'}${script}\n`)
  if (!scriptPath) process.stderr.write(`relay: ${prefix}/${values['script-name']} answers 404: the tracker is not built (npm run build) and no --script was given\n`)
  stopOnSignals(server)
} catch (error) {
  // A setting the relay refuses (upstream, prefix) is the command line's fault; anything else, such
  // as a port already taken, is not, and the usage would only mislead.
  if (error instanceof TypeError) fail(error.message)
  process.stderr.write(`relay: cannot listen on ${values.host}:${values.port}: ${(error as Error).message}\n`)
  process.exit(1)
}

/**
 * SIGTERM or SIGINT: no new connections, and the requests under way are answered (core may already
 * have stored what they carry; cut, the tracker would send it again) for up to STOP_GRACE_MS, then
 * the process exits. Without this, Bun's default ended it at once, resetting every one of them.
 * Asked again: exit now.
 */
function stopOnSignals(server: { stop(closeActiveConnections?: boolean): Promise<void> }): void {
  let stopping = false
  const onSignal = () => {
    if (stopping) process.exit(1)
    stopping = true
    Promise.race([server.stop(), Bun.sleep(STOP_GRACE_MS)])
      .then(() => server.stop(true))
      .then(
        () => process.exit(0),
        () => process.exit(1),
      )
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
}
