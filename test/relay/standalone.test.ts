import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { startCore } from '../helpers/core'
import { ROOT } from '../helpers/process'

const core = await startCore()
const coreUrl = await core.listen()
afterAll(() => core.close())

/** `npm run relay -- ...` runs this file with bun; the test runs it the same way. */
function startStandalone(args: string[]) {
  return Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
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
      body: JSON.stringify({ sessionId: 'standalone', eventName: 'hello' }),
    })
    expect(await res.json()).toEqual({ success: true })
    expect(await core.database.db.rows(sql`select 1 from events where session_id = 'standalone'`)).toHaveLength(1)
  } finally {
    proc.kill()
    await proc.exited
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
