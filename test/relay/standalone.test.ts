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
