import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { startCore } from '../helpers/core'
import { ROOT } from '../helpers/process'

// Deno, and Node's ESM loader, take an import as written: './index' is not './index.ts' to them. Bun,
// tsx and bundlers guess the extension, so only a runtime that does not shows whether the relay
// loads where README's Deno recipe runs it. Node with its own resolver stands in for Deno here.
const core = await startCore()
const coreUrl = await core.listen()
afterAll(() => core.close())

test("the relay's modules load with imports resolved as written, and the Deno adapter relays an event that is stored", async () => {
  const node = Bun.spawn(
    ['node', '--import', join(import.meta.dir, 'fixtures/strip-types.mjs'), join(import.meta.dir, 'fixtures/strict-relay.mjs'), coreUrl, core.key, 'strict-imports'],
    { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' },
  )
  const [stdout, stderr, exitCode] = await Promise.all([new Response(node.stdout).text(), new Response(node.stderr).text(), node.exited])
  expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: '' })
  expect(JSON.parse(stdout)).toEqual({ status: 200, answer: { success: true }, loaded: ['function', 'function', 'function', 'function', 'function'] })
  expect(await core.database.db.rows(sql`select event_name from events where session_id = 'strict-imports'`)).toEqual([{ event_name: 'deno-shaped' }])
})
