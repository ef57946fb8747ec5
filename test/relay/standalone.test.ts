import { afterAll, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { startCore } from '../helpers/core'
import { ROOT } from '../helpers/process'
import { rawRequest } from '../helpers/raw-http'

const core = await startCore()
const coreUrl = await core.listen()
afterAll(() => core.close())

/** `npm run relay -- ...` runs this file with bun; the test runs it the same way. */
function startStandalone(args: string[], cwd = ROOT) {
  return Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = ''
  for await (const chunk of stream) {
    text += new TextDecoder().decode(chunk)
    if (text.includes('\n')) break
  }
  return text
}

test('standalone mode relays to core and the event is stored', async () => {
  const proc = startStandalone(['--upstream', coreUrl, '--prefix', '/_sl', '--port', '0', '--host', '127.0.0.1'])
  try {
    const line = await firstLine(proc.stdout)
    const url = line.match(/listening on (http:\/\/\S+?)\/? /)?.[1]
    expect(url).toBeDefined()
    const res = await fetch(`${url}/_sl/api/ingestion/customEvent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: 'standalone', endUserId: 'standalone-u', eventName: 'hello' }),
    })
    expect(await res.json()).toEqual({ success: true })
    expect(await core.database.db.rows(sql`select 1 from events where session_id = 'standalone'`)).toHaveLength(1)
  } finally {
    proc.kill()
    await proc.exited
  }
})

test("a body declared far over --max-body-bytes is the relay's 413 in the error shape, not Bun's own bare one", async () => {
  // Bun.serve answers a declared length over its maxRequestBodySize itself, with no body, before the relay sees it.
  const proc = startStandalone(['--upstream', coreUrl, '--port', '0', '--host', '127.0.0.1', '--max-body-bytes', '1000'])
  try {
    const url = (await firstLine(proc.stdout)).match(/listening on (http:\/\/\S+?)\/? /)![1]
    for (const length of [1001, 5000, 10 * 1024 * 1024 * 1024]) {
      const { status, headers, text } = await rawRequest(url, `POST /_sl/api/ingestion/customEvent HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{}`)
      expect({ length, status, type: headers['content-type'], code: text.match(/"code":"(\w+)"/)?.[1] }).toEqual({ length, status: 413, type: 'application/json', code: 'payload_too_large' })
    }
  } finally {
    proc.kill()
    await proc.exited
  }
})

test('--help and -h print the usage on stdout and exit 0, as the admin commands do', async () => {
  for (const flag of ['--help', '-h']) {
    const proc = startStandalone([flag])
    expect({ flag, code: await proc.exited }).toEqual({ flag, code: 0 })
    expect(await new Response(proc.stdout).text()).toContain('usage: npm run relay')
  }
})

test('bad arguments exit 2 with the usage', async () => {
  const proc = startStandalone(['--prefix', '/_sl'])
  expect(await proc.exited).toBe(2)
  expect(await new Response(proc.stderr).text()).toContain('--upstream is required')
})

test('a port already taken exits 1 with one line that says so, without the usage', async () => {
  const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  try {
    const proc = startStandalone(['--upstream', coreUrl, '--port', String(taken.port), '--host', '127.0.0.1'])
    expect(await proc.exited).toBe(1)
    const stderr = await new Response(proc.stderr).text()
    expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^relay: cannot listen on 127.0.0.1:${taken.port}: `))])
  } finally {
    taken.stop(true)
  }
})

test('a prefix the relay refuses is the command line at fault: exit 2 with the usage', async () => {
  const proc = startStandalone(['--upstream', coreUrl, '--prefix', '/a/../b', '--port', '0'])
  expect(await proc.exited).toBe(2)
  const stderr = await new Response(proc.stderr).text()
  expect(stderr).toContain('is not a plain path')
  expect(stderr).toContain('usage: npm run relay')
})

test('a number that is empty, not plain digits, or a port past 65535 is the command line at fault: exit 2 with the usage', async () => {
  // `--max-body-bytes=$UNSET` was 0, refusing every body with 413; `--port=$UNSET` listened on a random port.
  for (const [name, value] of [['port', ''], ['max-body-bytes', ''], ['timeout-ms', ' '], ['port', '0x1f90'], ['max-body-bytes', '1e6'], ['port', '70000']]) {
    const proc = startStandalone(['--upstream', coreUrl, '--host', '127.0.0.1', ...(name === 'port' ? [] : ['--port', '0']), `--${name}=${value}`])
    const code = await Promise.race([proc.exited, Bun.sleep(3000).then(() => 'listening')])
    proc.kill()
    const stderr = await new Response(proc.stderr).text()
    expect({ name, value, code, usage: stderr.includes('usage: npm run relay') }).toEqual({ name, value, code: 2, usage: true })
  }
})

test('a --script that cannot be read stops it before it listens: exit 2, naming the file', async () => {
  const proc = startStandalone(['--upstream', coreUrl, '--port', '0', '--host', '127.0.0.1', '--script', 'no/such/t.js'])
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  expect({ code, stdout }).toEqual({ code: 2, stdout: '' })
  expect(stderr).toStartWith('relay: --script no/such/t.js cannot be read: ENOENT')
})

test("run from another directory, it still serves the checkout's built tracker as /_sl/t.js, gzipped for who accepts it (or says it has none)", async () => {
  const built = join(ROOT, 'tracker/dist/t.js')
  const proc = startStandalone(['--upstream', coreUrl, '--port', '0', '--host', '127.0.0.1'], tmpdir())
  try {
    const line = await firstLine(proc.stdout)
    const url = line.match(/listening on (http:\/\/\S+?)\/? /)![1]
    const res = await fetch(`${url}/_sl/t.js`, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit)
    if (existsSync(built)) {
      expect(line).toContain(`script /_sl/t.js from ${built}`)
      expect({ status: res.status, encoding: res.headers.get('content-encoding') }).toEqual({ status: 200, encoding: 'gzip' })
      expect(gunzipSync(new Uint8Array(await res.arrayBuffer()))).toEqual(readFileSync(built))
    } else {
      expect(line).toContain('no script')
      expect(res.status).toBe(404)
      proc.kill()
      expect(await new Response(proc.stderr).text()).toContain('/_sl/t.js answers 404: the tracker is not built')
    }
  } finally {
    proc.kill()
    await proc.exited
  }
})

test("core silent past Bun's default idle timeout (10 s) but within --timeout-ms: the client gets 504 upstream_timeout, not a closed connection", async () => {
  const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const proc = startStandalone(['--upstream', `http://127.0.0.1:${silent.port}`, '--port', '0', '--host', '127.0.0.1', '--timeout-ms', '14000'])
  try {
    const url = (await firstLine(proc.stdout)).match(/listening on (http:\/\/\S+?)\/? /)![1]
    const { status, headers, text } = await rawRequest(url, 'GET /_sl/health HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n')
    expect({ status, retryAfter: headers['retry-after'], code: status ? JSON.parse(text).error.code : null }).toEqual({ status: 504, retryAfter: '5', code: 'upstream_timeout' })
  } finally {
    proc.kill()
    await proc.exited
    silent.stop(true)
  }
}, 25_000)

test('SIGTERM lets the requests under way finish before it exits 0; it takes no new ones', async () => {
  let reached = 0
  const slow = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch() {
      reached++
      await Bun.sleep(500)
      return Response.json({ status: 'ok' })
    },
  })
  const proc = startStandalone(['--upstream', `http://127.0.0.1:${slow.port}`, '--port', '0', '--host', '127.0.0.1'])
  try {
    const url = (await firstLine(proc.stdout)).match(/listening on (http:\/\/\S+?)\/? /)![1]
    const pending = fetch(`${url}/_sl/health`).then(
      async (res) => ({ status: res.status, body: await res.text() }),
      (error: Error) => ({ failed: error.message }),
    )
    while (reached === 0) await Bun.sleep(5)
    proc.kill('SIGTERM')
    expect(await pending).toEqual({ status: 200, body: '{"status":"ok"}' })
    expect(await proc.exited).toBe(0)
    expect(await fetch(`${url}/_sl/health`).then(() => 'answered', () => 'refused')).toBe('refused')
  } finally {
    proc.kill()
    await proc.exited
    slow.stop(true)
  }
})
