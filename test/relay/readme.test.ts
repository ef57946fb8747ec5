import { afterAll, expect, test } from 'bun:test'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { Elysia } from 'elysia'
import { startCore } from '../helpers/core'
import { ROOT } from '../helpers/process'

// README's relay recipes against the module they show, so the two cannot drift apart unnoticed.
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const section = readme.slice(readme.indexOf('\n## Relay'), readme.indexOf('\n### Speed'))
const recipes = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map(([, code]) => code)

const core = await startCore()
const coreUrl = await core.listen()
const dir = mkdtempSync(join(tmpdir(), 'sightline-readme-'))
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await core.close()
})

test('every name a recipe imports from the relay is a function the module exports', async () => {
  const imports = recipes.flatMap((code) =>
    [...code.matchAll(/import \{ ([^}]+) \} from '(@sightline\/relay[^']*)'/g)].flatMap(([, names, from]) => names.split(',').map((name) => ({ from, name: name.trim() }))),
  )
  const adapters = ['@sightline/relay', ...['bun', 'deno', 'node', 'elysia'].map((name) => `@sightline/relay/adapters/${name}`)]
  expect([...new Set(imports.map(({ from }) => from))].sort()).toEqual(adapters.sort())
  for (const { from, name } of imports) expect(typeof (await import(from))[name], `${name} from ${from}`).toBe('function')
})

/** The recipe's imports and its `const relay = ...` statement: the part that makes the relay, to run as written. */
function relayPart(code: string): string | null {
  const lines = code.split('\n')
  const start = lines.findIndex((line) => line.startsWith('const relay = '))
  if (start === -1) return null
  let depth = 0
  let end = start
  for (; end < lines.length; end++) {
    for (const char of lines[end].replace(/\/\/.*$/, '')) depth += char === '(' ? 1 : char === ')' ? -1 : 0
    if (depth === 0) break
  }
  return [...lines.filter((line) => line.startsWith('import ')), ...lines.slice(start, end + 1), 'export { relay }'].join('\n')
}

/**
 * A site of its own, away from the checkout: the relay installed from it, a tracker package with this
 * repository's package.json (its exports) and a built t.js of the test's, and `linked` packages of
 * the checkout's node_modules.
 */
function siteOfItsOwn(name: string, script: string, linked: string[]): string {
  const site = join(dir, name)
  const tracker = join(site, 'node_modules/@sightline/tracker')
  mkdirSync(join(tracker, 'dist'), { recursive: true })
  copyFileSync(join(ROOT, 'tracker/package.json'), join(tracker, 'package.json'))
  writeFileSync(join(tracker, 'dist/t.js'), script)
  symlinkSync(join(ROOT, 'relay'), join(site, 'node_modules/@sightline/relay'))
  for (const pkg of linked) symlinkSync(join(ROOT, 'node_modules', pkg), join(site, 'node_modules', pkg))
  return site
}

test("every recipe that makes a relay serves <prefix>/t.js from the tracker package's ./t.js export, wherever the server runs from", async () => {
  const site = siteOfItsOwn('site', 'window.__built = true', ['elysia'])

  const made = recipes.filter((code) => !code.includes('/route.ts')).map(relayPart)
  expect(made.every((part) => part !== null)).toBe(true)
  const served: Record<string, unknown> = {}
  for (const [i, part] of (made as string[]).entries()) {
    expect(part).toContain("script: { path: import.meta.resolve('@sightline/tracker/t.js') }")
    writeFileSync(join(site, `recipe${i}.ts`), part)
    const { relay } = await import(join(site, `recipe${i}.ts`))
    const adapter = part.match(/from '@sightline\/relay(?:\/adapters\/(\w+))?'/)![1] ?? 'createRelay'
    const request = new Request('http://shop.test/_sl/t.js', { headers: { 'accept-encoding': 'identity' } })
    served[adapter] = await answer(adapter, relay, request).then(async (res) => ({ status: res.status, body: await res.text() }))
  }
  const ok = { status: 200, body: 'window.__built = true' }
  expect(served).toEqual({ createRelay: ok, bun: ok, deno: ok, node: ok, elysia: ok })
})

/** One request through a recipe's relay, called the way its runtime calls it. */
async function answer(adapter: string, relay: any, request: Request): Promise<Response> {
  switch (adapter) {
    case 'bun':
      return relay(request, { requestIP: () => ({ address: '127.0.0.1' }), timeout: () => {} })
    case 'deno':
      return relay(request, { remoteAddr: { hostname: '127.0.0.1' } })
    case 'elysia':
      return new Elysia().use(relay).handle(request)
    case 'node': {
      const server = createServer(relay)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        return await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/_sl/t.js`, { headers: request.headers }).then((res) => new Response(res.body, res))
      } finally {
        server.close()
      }
    }
    default:
      return relay(request)
  }
}

test("README's Next.js route handler, called as Next calls it, relays to core and serves the script", async () => {
  const recipe = recipes.find((code) => code.includes('/route.ts'))!
  writeFileSync(join(dir, 't.js'), 'console.log("tracker")')
  // Only where it comes from changes: this checkout's relay, and a script file of this test's.
  const source = recipe.replace("from '@sightline/relay'", `from ${JSON.stringify(join(ROOT, 'relay/src/index.ts'))}`).replace("'public/sightline/t.js'", JSON.stringify(join(dir, 't.js')))
  expect(source).not.toContain('@sightline/relay')
  expect(source).not.toContain('public/sightline')
  writeFileSync(join(dir, 'route.ts'), source)
  process.env.SIGHTLINE_URL = coreUrl
  const route = await import(join(dir, 'route.ts')).finally(() => delete process.env.SIGHTLINE_URL)
  const context = { params: Promise.resolve({ path: ['api', 'ingestion', 'customEvent'] }) }

  expect(route.dynamic).toBe('force-dynamic')
  const stored = await route.POST(
    new Request('https://shop.example/_sl/api/ingestion/customEvent', {
      method: 'POST',
      headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: 'readme-next', endUserId: 'readme-next-u', eventName: 'from-next' }),
    }),
    context,
  )
  expect(await stored.json()).toEqual({ success: true })
  expect(await core.database.db.rows(sql`select event_name from events where session_id = 'readme-next'`)).toEqual([{ event_name: 'from-next' }])

  const script = await route.GET(new Request('https://shop.example/_sl/t.js'), context)
  expect({ status: script.status, body: await script.text() }).toEqual({ status: 200, body: 'console.log("tracker")' })
  expect((await route.HEAD(new Request('https://shop.example/_sl/health/simple', { method: 'HEAD' }), context)).status).toBe(200)
  const preflight = await route.OPTIONS(
    new Request('https://shop.example/_sl/api/ingestion/customEvent', {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    }),
    context,
  )
  expect(preflight.status).toBe(204)
  expect((await route.GET(new Request('https://shop.example/_sl/api/internal/scan-findings'), context)).status).toBe(404)
})

test("README's Node recipe starts as README says to start it (node --import tsx), in a site whose package.json is npm init's", async () => {
  // npm init writes "type": "commonjs": a .js file there is CommonJS to tsx, where the recipe's
  // import.meta.resolve does not exist, and the server died at its first line.
  const command = readme.match(/`(node --import tsx ([\w.-]+))`/)
  expect(command).not.toBeNull()
  const [, , file] = command!
  const site = siteOfItsOwn('node-site', 'window.__node = true', ['tsx'])
  writeFileSync(join(site, 'package.json'), JSON.stringify({ name: 'site', version: '1.0.0', type: 'commonjs' }))
  const recipe = recipes.find((code) => code.includes('@sightline/relay/adapters/node'))!
  // As written, but for the site's own app, and on a port of the system's choosing that it prints.
  const source = recipe
    .split('\n')
    .filter((line) => !line.startsWith('app.use('))
    .join('\n')
    .replace('.listen(8080)', ".listen(0, '127.0.0.1', function () { console.log(this.address().port) })")
  expect(source).toContain("listen(0, '127.0.0.1'")
  writeFileSync(join(site, file), source)
  const node = Bun.spawn(['node', '--import', 'tsx', file], { cwd: site, stdout: 'pipe', stderr: 'pipe' })
  try {
    const reader = node.stdout.getReader()
    const first = await Promise.race([reader.read().then(({ value }) => new TextDecoder().decode(value ?? new Uint8Array())), node.exited.then(() => '')])
    const port = Number(first.trim())
    expect({ port: port > 0, stderr: port > 0 ? '' : await new Response(node.stderr).text() }).toEqual({ port: true, stderr: '' })
    const res = await fetch(`http://127.0.0.1:${port}/_sl/t.js`, { headers: { 'accept-encoding': 'identity' } })
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: 'window.__node = true' })
  } finally {
    node.kill()
    await node.exited
  }
})
