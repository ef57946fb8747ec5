import { createServer, type Server as NodeServer } from 'node:http'
import { join } from 'node:path'
import type { Server, Socket, Subprocess, TCPSocketListener } from 'bun'
import { bunRelay } from '@sightline/relay/adapters/bun'
import { denoRelay } from '@sightline/relay/adapters/deno'
import { elysiaRelay } from '@sightline/relay/adapters/elysia'
import { nodeRelay } from '@sightline/relay/adapters/node'
import { serveStandalone } from '@sightline/relay/standalone/serve'
import { Elysia } from 'elysia'
import type { RelayOptions } from '@sightline/relay'
import { afterAll } from 'bun:test'
import { startCore, type StartCoreOptions } from '../helpers/core'
import { ROOT } from '../helpers/process'

export { rawRequest } from '../helpers/raw-http'

/** A relay listening on a real port, mounted the way each runtime's users mount it. */
export interface RunningRelay {
  url: string
  close(): Promise<void>
}

/** `standalone` is the relay's own HTTP/1.1 server (`npm run relay`), not an adapter an operator mounts. */
export type AdapterName = 'bun' | 'node' | 'node-middleware' | 'elysia' | 'deno' | 'standalone'

async function listenNode(server: NodeServer): Promise<RunningRelay> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const listenBun = (server: Server<unknown>): RunningRelay => ({ url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) })

/** Starts the relay through one adapter. Deno is not installed here: its handler shape is driven by Bun.serve, passing the `info` Deno would. */
export async function startRelay(adapter: AdapterName, options: RelayOptions): Promise<RunningRelay> {
  switch (adapter) {
    case 'bun':
      return listenBun(Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: bunRelay(options) }))
    case 'deno': {
      const handler = denoRelay(options)
      return listenBun(
        Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request, server) => handler(request, { remoteAddr: { hostname: server.requestIP(request)!.address, transport: 'tcp' } }) }),
      )
    }
    case 'elysia': {
      const app = new Elysia().get('/', () => 'the site').use(elysiaRelay(options)).listen({ port: 0, hostname: '127.0.0.1' })
      return { url: `http://127.0.0.1:${app.server!.port}`, close: async () => void (await app.stop(true)) }
    }
    case 'node':
      return listenNode(createServer(nodeRelay(options)))
    case 'standalone': {
      const server = serveStandalone({ ...options, port: 0, hostname: '127.0.0.1' })
      return { url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) }
    }
    case 'node-middleware': {
      // connect/express style: the relay passes what is not under its prefix to the next handler.
      const middleware = nodeRelay(options)
      return listenNode(
        createServer((req, res) =>
          middleware(req, res, () => {
            res.statusCode = 200
            res.end('the site')
          }),
        ),
      )
    }
  }
}

export interface Recorded {
  method: string
  /** Path and query as received. */
  target: string
  headers: Record<string, string>
  body: Uint8Array
  /** The relay's connection, to tell reused connections apart. */
  remotePort: number
}

/**
 * A real core listening on a real port, with a recording hop (startTap) in front of it to see what the
 * relay sends; both closed after the file's tests.
 */
export async function tappedCore(options: StartCoreOptions = {}) {
  const core = await startCore(options)
  const coreUrl = await core.listen()
  const tap = startTap(coreUrl)
  afterAll(async () => {
    tap.close()
    await core.close()
  })
  return { core, coreUrl, tap }
}

/**
 * A recording hop between the relay and core: it keeps what the relay sent (headers, exact body
 * bytes) and passes it on to core unchanged, so a test sees both sides of the relay with the real
 * core behind it. `respondWith` adds answer headers (e.g. a Set-Cookie the relay must drop).
 */
export function startTap(coreUrl: string, respondWith: Record<string, string> = {}) {
  const seen: Recorded[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    maxRequestBodySize: 64 * 1024 * 1024,
    async fetch(request, srv) {
      const url = new URL(request.url)
      const body = new Uint8Array(await request.arrayBuffer())
      seen.push({ method: request.method, target: url.pathname + url.search, headers: Object.fromEntries(request.headers), body, remotePort: srv.requestIP(request)!.port })
      const headers = new Headers(request.headers)
      headers.delete('host')
      headers.delete('content-length')
      headers.delete('transfer-encoding')
      // Transparent: fetch would add its own User-Agent where the relay sent none.
      if (!headers.has('user-agent')) headers.set('user-agent', '')
      const answer = await fetch(coreUrl + url.pathname + url.search, { method: request.method, headers, body: request.method === 'GET' || request.method === 'HEAD' ? undefined : body })
      const out = new Headers(answer.headers)
      for (const [name, value] of Object.entries(respondWith)) out.append(name, value)
      out.delete('content-length')
      out.delete('content-encoding')
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: out })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, seen, close: () => server.stop(true) }
}

/**
 * A bare TCP upstream for what a real core cannot be made to do on cue: never answer (slow), never
 * read (`read: false`, for backpressure), or show exactly which bytes arrived before the connection
 * closed (client abort, streaming).
 */
export function startSilentUpstream({ read = true }: { read?: boolean } = {}) {
  const connections: { received: number; closed: boolean; firstByteAt: number | null }[] = []
  const listener: TCPSocketListener<{ index: number }> = Bun.listen<{ index: number }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: connections.push({ received: 0, closed: false, firstByteAt: null }) - 1 }
        if (!read) socket.pause()
      },
      data(socket, chunk) {
        const connection = connections[socket.data.index]
        connection.firstByteAt ??= Date.now()
        connection.received += chunk.byteLength
      },
      close(socket) {
        connections[socket.data.index].closed = true
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, connections, close: () => listener.stop(true) }
}

/**
 * An upstream whose answer never ends: a chunk every 20 ms for as long as the connection is open.
 * Says which of its connections are still open, to see whether an answer nobody reads is given up.
 */
export function startEndlessUpstream() {
  const connections: { closed: boolean }[] = []
  const listener = Bun.listen<{ index: number; timer?: ReturnType<typeof setInterval> }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: connections.push({ closed: false }) - 1 }
      },
      data(socket) {
        if (socket.data.timer) return
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n')
        socket.data.timer = setInterval(() => socket.write(`400\r\n${'x'.repeat(1024)}\r\n`), 20)
      },
      close(socket) {
        clearInterval(socket.data.timer)
        connections[socket.data.index].closed = true
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, connections, close: () => listener.stop(true) }
}

/**
 * Targets the URL parser resolves before the relay matches them, as a browser resolves them before
 * sending: each names `/health` under the prefix `/_sl`.
 */
export const RESOLVED_TO_HEALTH = ['/_sl/./health', '/_sl/api/ingestion/../../health', '/_sl/api/ingestion/%2e%2e/%2e%2e/health', '/_sl/api/ingestion\\..\\..\\health']

/**
 * An upstream that records each request line exactly as it arrived (a server in front of core would
 * resolve dot segments itself and hide what the relay sent) and answers `{"status":"ok"}`.
 */
export function startLineRecorder() {
  const targets: string[] = []
  const answer = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{"status":"ok"}'
  const listener = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket, chunk) {
        // Requests without bodies, one per write: each request line is answered once.
        for (const [, target] of Buffer.from(chunk).toString('latin1').matchAll(/^[A-Z]+ (\S+) HTTP\/1\.1\r$/gm)) {
          targets.push(target)
          socket.write(answer)
        }
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, targets, close: () => listener.stop(true) }
}


/** A free port with nothing listening on it (for "core is down"). */
export async function closedPortUrl(): Promise<string> {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return `http://127.0.0.1:${port}`
}

/**
 * An address whose connections never open: a listener that accepts none, its queue of one already
 * full, so the kernel leaves a new connection's SYN unanswered and the connect waits (as on a host
 * that drops packets). A listen backlog cannot be set from Bun, so it is Python's; null without it.
 */
export async function startUnopenableUpstream(): Promise<{ url: string; close(): void } | null> {
  if (!Bun.which('python3')) return null
  const script = `
import socket, sys, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)
held = []
for _ in range(3):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    held.append(c)
time.sleep(0.2)
print(s.getsockname()[1], flush=True)
sys.stdin.read()
`
  const proc = Bun.spawn(['python3', '-c', script], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  const { value } = await reader.read()
  const port = Number(new TextDecoder().decode(value).trim())
  return { url: `http://127.0.0.1:${port}`, close: () => proc.kill() }
}

/** What a stalling upstream sends before it goes silent: the head and a tenth of a body, in either framing. */
const STALLED = {
  length: `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\n\r\n${'x'.repeat(100)}`,
  chunked: `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n64\r\n${'x'.repeat(100)}\r\n`,
}
export type StalledFraming = keyof typeof STALLED

/**
 * An upstream that stalls mid-answer: `/health` gets a head and part of its body, then nothing, the
 * connection left open; `/health/simple` is answered whole. Records which targets each connection
 * carried and whether it is closed, to see that a stalled connection is given up and not reused.
 */
export function startStallingUpstream(framing: StalledFraming) {
  const connections: { targets: string[]; closed: boolean }[] = []
  const listener = Bun.listen<{ index: number; buffered: string }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: connections.push({ targets: [], closed: false }) - 1, buffered: '' }
      },
      data(socket, chunk) {
        // Requests without bodies: each head is one request.
        socket.data.buffered += Buffer.from(chunk).toString('latin1')
        for (let end = socket.data.buffered.indexOf('\r\n\r\n'); end !== -1; end = socket.data.buffered.indexOf('\r\n\r\n')) {
          const target = socket.data.buffered.split(' ', 2)[1]
          socket.data.buffered = socket.data.buffered.slice(end + 4)
          connections[socket.data.index].targets.push(target)
          socket.write(target === '/health/simple' ? 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok' : STALLED[framing])
        }
      },
      close(socket) {
        connections[socket.data.index].closed = true
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, connections, close: () => listener.stop(true) }
}

/**
 * The fixture server (fixtures/node-server.ts) under real Node, relaying to `upstream`; resolves with
 * its URL. Its process is added to `running` at once, for the caller to end. With `siteTimeoutMs`, the
 * relay is a middleware of a site that answers 503 itself past that time (see the fixture).
 */
export async function startNodeFixture(running: Subprocess<'ignore', 'pipe', 'pipe'>[], upstream: string, timeoutMs?: number, siteTimeoutMs?: number): Promise<string> {
  const args = timeoutMs === undefined && siteTimeoutMs === undefined ? [upstream] : [upstream, '/_sl', String(timeoutMs ?? 30_000), ...(siteTimeoutMs === undefined ? [] : [String(siteTimeoutMs)])]
  const node = Bun.spawn(['node', '--import', 'tsx', join(import.meta.dir, 'fixtures/node-server.ts'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  running.push(node)
  let output = ''
  for await (const chunk of node.stdout) {
    output += new TextDecoder().decode(chunk)
    const found = output.match(/listening (http:\/\/\S+)/)?.[1]
    if (found) return found
  }
  throw new Error(`the Node relay did not start: ${output}${await new Response(node.stderr).text()}`)
}

type ScriptedConnection = { index: number; buffered: string; requests: number }
/** `nth`: the request's number on its connection, from 1. */
export type ScriptedAnswer = (index: number, head: string, socket: Socket<ScriptedConnection>, nth: number) => (string | Uint8Array)[] | null

/**
 * An upstream that answers each request head with `answerFor(...)`: pieces written 15 ms apart (each
 * its own read on the relay's side), or nothing (null). Records the connection of each request.
 */
export function startScripted(answerFor: ScriptedAnswer) {
  const connections: number[] = []
  const open: boolean[] = []
  let count = 0
  const listener = Bun.listen<ScriptedConnection>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { index: open.push(true) - 1, buffered: '', requests: 0 }
      },
      close(socket) {
        open[socket.data.index] = false
      },
      async data(socket, chunk) {
        socket.data.buffered += Buffer.from(chunk).toString('latin1')
        for (let end = socket.data.buffered.indexOf('\r\n\r\n'); end !== -1; end = socket.data.buffered.indexOf('\r\n\r\n')) {
          const head = socket.data.buffered.slice(0, end)
          // Bodies here are a few bytes, sent in the same write as their head.
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0)
          socket.data.buffered = socket.data.buffered.slice(end + 4 + length)
          connections.push(socket.data.index)
          const pieces = answerFor(count++, head, socket, ++socket.data.requests)
          for (const [i, piece] of (pieces ?? []).entries()) {
            if (i > 0) await Bun.sleep(15)
            socket.write(piece)
          }
        }
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, connections, open, close: () => listener.stop(true) }
}
