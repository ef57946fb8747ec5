import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * Grouping by the innermost in-app frame's file: what changes with every page load or build must
 * not make one bug an Issue per load or per build.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const issueOf = async (stack: string, extra: object = {}): Promise<string> => {
  const res = await core.post('/api/ingestion/errors', {
    sessionId: 'group-files',
    endUserId: 'user-gf',
    name: 'TypeError',
    message: "Cannot read properties of undefined (reading 'rows')",
    stack,
    url: 'https://shop.example/reports',
    timestampMs: Date.now(),
    ...extra,
  })
  expect(res.status).toBe(200)
  return ((await res.json()) as { issues: string[] }).issues[0]
}

describe('grouping by file', () => {
  test('a worker made from a blob: URL is one file on every page load, whatever id the browser gave the blob', async () => {
    const worker = (id: string) => `TypeError: Cannot read properties of undefined (reading 'rows')
    at summarize (blob:https://shop.example/${id}:3:17)
    at onmessage (blob:https://shop.example/${id}:9:5)`
    const firstLoad = await issueOf(worker('550e8400-e29b-41d4-a716-446655440000'))
    expect(await issueOf(worker('9b2f7c1e-0d4a-4c8e-b1f3-6a5d2e7c8f90'))).toBe(firstLoad)
    // Firefox writes the same frames as `fn@url:line:col`.
    expect(await issueOf('summarize@blob:https://shop.example/0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9:3:17\n')).toBe(firstLoad)
    // Another function of a blob worker is another Issue.
    expect(await issueOf(worker('550e8400-e29b-41d4-a716-446655440000').replace('summarize', 'aggregate'))).not.toBe(firstLoad)
  })

  test("Rollup's and Vite's build hashes are dropped even when they hold a `-` (`index-D-XbHvJo.js`): two builds are one Issue", async () => {
    const build = (hash: string) => `TypeError: Cannot read properties of undefined (reading 'rows')
    at renderReport (https://shop.example/assets/reports-${hash}.js:41:23)`
    const builds = ['BfR3xZq9', 'D-XbHvJo', 'a_c-8kQ2', '-Xk2mNp7', 'Zq8-wP1-', 'Cp4_tLw9']
    const issues = new Set<string>()
    for (const [i, hash] of builds.entries()) issues.add(await issueOf(build(hash), { release: `shop@1.${i}.0` }))
    expect(issues.size).toBe(1)
    // The name before the hash still tells files apart.
    expect(await issueOf(build('D-XbHvJo').replace('reports-', 'orders-'))).not.toBe([...issues][0])
  })

  test("esbuild's build hashes (8 of A-Z and 2-7) are dropped when they hold no digit too (`app-QWERTYUI.js`): two builds are one Issue", async () => {
    const build = (hash: string) => `TypeError: Cannot read properties of undefined (reading 'rows')
    at renderReport (https://shop.example/assets/chart-${hash}.js:41:23)`
    const issues = new Set<string>()
    for (const [i, hash] of ['K7XP2QMN', 'QWERTYUI', 'ZZPLMKAB'].entries()) issues.add(await issueOf(build(hash), { release: `shop@2.${i}.0` }))
    expect(issues.size).toBe(1)
    // A name of lowercase letters is a name: it still tells files apart.
    expect(await issueOf(build('settings'))).not.toBe(await issueOf(build('checkout')))
  })

  test('a V8 message over several lines, one starting with "at", is no frame: the real top frame groups and is stored', async () => {
    const thrown = (message: string) => `Error: ${message}
    at validateOrder (https://shop.example/assets/orders.js:12:9)
    at submitOrder (https://shop.example/assets/orders.js:30:5)`
    const report = (message: string) => ({ name: 'Error', message, stack: thrown(message), sessionId: 'group-lines' })
    const plain = await issueOf('', report('invalid order: no items'))
    const multiLine = await issueOf('', report('invalid order:\nat least one item required'))
    const withParens = await issueOf('', report('invalid order:\nat most 3 coupons (got 5)'))
    expect(multiLine).toBe(plain)
    expect(withParens).toBe(plain)
    const [stored] = await core.database.db.rows<{ frames: { filename: string; function: string }[] }>(
      sql`select frames from error_events where issue_id = ${multiLine} and message like '%at least%'`,
    )
    expect(stored.frames.map((f) => f.function)).toEqual(['validateOrder', 'submitOrder'])
  })
})
