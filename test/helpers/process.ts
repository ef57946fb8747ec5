import { join } from 'node:path'
import type { Subprocess } from 'bun'

export const ROOT = join(import.meta.dir, '..', '..')

export interface CoreProcess {
  url: string
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  /** Everything the process printed so far. */
  output(): string
  /** What it printed on stdout alone (its log lines). */
  stdout(): string
  stop(): Promise<void>
}

/**
 * Starts `core/src/main.ts` as its own process, as an operator would, and waits until it listens.
 * The listening URL is read from its own log line.
 */
export async function spawnCore(env: Record<string, string>, timeoutMs = 20_000): Promise<CoreProcess> {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let output = ''
  let stdout = ''
  const collect = async (stream: ReadableStream<Uint8Array>, alone?: boolean) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true })
      output += text
      if (alone) stdout += text
    }
  }
  void collect(proc.stdout, true)
  void collect(proc.stderr)
  const deadline = Date.now() + timeoutMs
  let url: string | undefined
  while (!url) {
    url = output.match(/"msg":"listening","url":"(http:\/\/[^"]+)"/)?.[1]
    if (url) break
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill()
      throw new Error(`core did not start (exit ${proc.exitCode}):\n${output}`)
    }
    await Bun.sleep(25)
  }
  return {
    url,
    proc,
    output: () => output,
    stdout: () => stdout,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** Runs the admin command line and returns its exit code and output. */
export async function runAdmin(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'core/src/cli.ts'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { exitCode, stdout, stderr }
}

/**
 * An HTTP/1.1 request written by hand on a connection of its own, so that a test decides when each part
 * of it reaches core: `firstPart` at once, the rest with `send`.
 */
export async function requestByHand(url: string, firstPart: string) {
  const { hostname, port } = new URL(url)
  let answer = ''
  let closed = false
  let onClose = () => {}
  const finished = new Promise<void>((resolve) => (onClose = resolve))
  const decoder = new TextDecoder()
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data: (_socket, data) => void (answer += decoder.decode(data, { stream: true })),
      close: () => {
        closed = true
        onClose()
      },
    },
  })
  socket.write(firstPart)
  return {
    send: (text: string) => void socket.write(text),
    end: () => void socket.end(),
    /** What core answered so far. */
    answer: () => answer,
    closed: () => closed,
    /** Settles once the connection is closed: by core after answering a request sent with `Connection: close`. */
    finished,
  }
}

/** A request whose body is announced but only trickles in: the connection stays busy until cut. */
export async function tricklingRequest(core: { url: string }, key: string) {
  const head = `POST /api/ingestion/customEvent HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer ${key}\r\nContent-Length: 1000\r\n\r\n`
  const request = await requestByHand(core.url, `${head}{"sessionId":"s",`)
  const trickle = setInterval(() => request.send(' '), 200)
  return {
    answer: request.answer,
    closed: request.closed,
    end() {
      clearInterval(trickle)
      request.end()
    },
  }
}
