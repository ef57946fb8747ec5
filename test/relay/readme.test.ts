import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
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
      body: JSON.stringify({ sessionId: 'readme-next', eventName: 'from-next' }),
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
