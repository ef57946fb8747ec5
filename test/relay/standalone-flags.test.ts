import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { ROOT } from '../helpers/process'

// What the standalone mode says about its flags: an operator copies a URL from it or fixes a flag by it.

function startStandalone(args: string[]) {
  return Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = ''
  for await (const chunk of stream) {
    text += new TextDecoder().decode(chunk)
    if (text.includes('\n')) break
  }
  return text.split('\n')[0]
}

test('an --upstream that is no http(s) URL (the scheme left off, the likeliest slip) is named, with what one looks like: exit 2 with the usage', async () => {
  const said = []
  for (const upstream of ['127.0.0.1:8000', 'localhost:8000', 'core']) {
    const proc = startStandalone(['--upstream', upstream, '--host', '127.0.0.1', '--port', '0'])
    const code = await Promise.race([proc.exited, Bun.sleep(3000).then(() => 'listening')])
    proc.kill()
    const stderr = await new Response(proc.stderr).text()
    said.push({ upstream, code, named: stderr.includes(`"${upstream}"`), example: stderr.includes('http://127.0.0.1:8000'), usage: stderr.includes('usage: npm run relay') })
  }
  expect(said).toEqual(['127.0.0.1:8000', 'localhost:8000', 'core'].map((upstream) => ({ upstream, code: 2, named: true, example: true, usage: true })))
})

test('a --prefix without its leading slash or with a trailing one is served as /_sl, and said so: the script URL it prints is the one that answers', async () => {
  const upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  try {
    for (const prefix of ['_sl', '/_sl/']) {
      const proc = startStandalone(['--upstream', upstream.url.href, '--host', '127.0.0.1', '--port', '0', '--prefix', prefix, '--script-name', 't.js', '--script', join(ROOT, 'package.json')])
      try {
        const line = await firstLine(proc.stdout)
        const listening = line.match(/listening on (\S+)/)![1]
        const scriptPath = line.match(/script (\S+) from/)![1]
        const status = (await fetch(new URL(scriptPath, listening))).status
        expect({ prefix, line: line.includes(', prefix /_sl, script /_sl/t.js from '), scriptPath, status }).toEqual({ prefix, line: true, scriptPath: '/_sl/t.js', status: 200 })
      } finally {
        proc.kill()
        await proc.exited
      }
    }
  } finally {
    upstream.stop(true)
  }
})
