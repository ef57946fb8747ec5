import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { StoredFrame } from '@sightline/core/ingest/errors/service'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * What a map's sources and a report's release look like on the way in may differ from how they are
 * stored and compared; symbolication and grouping must not depend on the difference.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

// Generated line 1, column 0 maps to source 0 (`src/cart.ts`), line 1, column 0.
const mapOf = (sources: string[]) => ({ version: 3, file: 'app.js', sources, names: [], mappings: 'AAAA' })
const upload = async (release: string, map: object) => {
  const res = await core.post('/api/ingestion/sourcemaps', { release, files: [{ name: 'assets/app.js.map', url: '~/assets/app.js', content: map }] })
  expect(res.status).toBe(200)
}
const report = (release: string) => ({
  sessionId: 's-build-forms',
  endUserId: 'u-build-forms',
  name: 'TypeError',
  message: 'total is undefined',
  stack: 'TypeError: total is undefined\n    at applyCoupon (https://shop.example/assets/app.js:1:1)',
  timestampMs: Date.now() - 1_000,
  release,
})
const sendReport = async (release: string) => {
  const res = await core.post('/api/ingestion/errors', report(release))
  expect(res.status).toBe(200)
  const [issueId] = ((await res.json()) as { issues: string[] }).issues
  const [stored] = await core.database.db.rows<{ frames: StoredFrame[]; culprit: string }>(
    sql`select e.frames, i.culprit from error_events e join issues i using (project_id, issue_id) where e.issue_id = ${issueId} and e.release = ${release} limit 1`,
  )
  return { issueId, frame: stored.frames[0], culprit: stored.culprit }
}

describe('source maps whose sources are absolute file:// paths', () => {
  test('the same build on two machines (other checkout folders) maps to the same files, and is one Issue', async () => {
    const on = (root: string) => [`file://${root}/src/cart.ts`, `file://${root}/index.ts`, `file://${root}/node_modules/money/index.js`]
    await upload('runner-a@1', mapOf(on('/home/ci/runner-a/work/shop')))
    await upload('runner-b@1', mapOf(on('/builds/b7f/shop')))
    const a = await sendReport('runner-a@1')
    const b = await sendReport('runner-b@1')
    // Relative to the root the map's own (not node_modules) sources share: the build machine's folders are no part of it.
    expect(a.frame.mapped).toMatchObject({ source: 'src/cart.ts', line: 1, column: 1, function: 'applyCoupon' })
    expect(b.frame.mapped).toMatchObject({ source: 'src/cart.ts' })
    expect(b.issueId).toBe(a.issueId)
    expect(a.culprit).toBe('applyCoupon (src/cart.ts)')
  })

  test("a dependency's file:// source keeps its node_modules path and is not in-app; other sources are as they were", async () => {
    await upload('deps@1', mapOf(['file:///home/ci/shop/node_modules/money/index.js', 'file:///home/ci/shop/src/cart.ts']))
    expect((await sendReport('deps@1')).frame).toMatchObject({ inApp: false, mapped: { source: 'node_modules/money/index.js' } })
    await upload('webpack@1', mapOf(['webpack://shop/src/cart.ts']))
    expect((await sendReport('webpack@1')).frame.mapped).toMatchObject({ source: 'webpack://shop/src/cart.ts' })
  })

  test('a map whose sources are all dependencies (a vendor chunk) keeps their node_modules paths: not in-app', async () => {
    await upload('vendor@1', mapOf(['file:///home/ci/shop/node_modules/money/dist/index.js', 'file:///home/ci/shop/node_modules/money/dist/round.js']))
    const vendor = await sendReport('vendor@1')
    expect(vendor.frame).toMatchObject({ inApp: false, mapped: { source: 'node_modules/money/dist/index.js' } })
  })
})

describe('a release holding a lone surrogate', () => {
  test("finds the maps uploaded under it, as both are stored (U+FFFD in the surrogate's place)", async () => {
    // A release a page cut inside an emoji: the upload and the report send the same text.
    const release = 'shop@2.0 \ud83d'
    await upload(release, mapOf(['src/cart.ts']))
    const [row] = await core.database.db.rows<{ release: string }>(sql`select release from sourcemaps where release like 'shop@2.0 %'`)
    expect(row.release).toBe('shop@2.0 \ufffd')
    const res = await core.post('/api/ingestion/errors', report(release))
    expect(res.status).toBe(200)
    const [stored] = await core.database.db.rows<{ frames: StoredFrame[]; release: string }>(
      sql`select frames, release from error_events where release = ${'shop@2.0 \ufffd'}`,
    )
    expect(stored.frames[0].mapped).toMatchObject({ source: 'src/cart.ts', sourcemap: 'assets/app.js.map' })
  })
})

describe('a script URL holding a lone surrogate', () => {
  test('finds the map uploaded for it, as both are stored', async () => {
    const map = { ...mapOf(['src/cart.ts']), file: undefined }
    const res = await core.post('/api/ingestion/sourcemaps', { release: 'url@1', files: [{ name: 'maps/bundle.map', url: '~/assets/caf\udce9.js', content: map }] })
    expect(res.status).toBe(200)
    const sent = await core.post('/api/ingestion/errors', {
      ...report('url@1'),
      stack: 'TypeError: total is undefined\n    at applyCoupon (https://shop.example/assets/caf\udce9.js:1:1)',
    })
    expect(sent.status).toBe(200)
    const [stored] = await core.database.db.rows<{ frames: StoredFrame[] }>(sql`select frames from error_events where release = 'url@1'`)
    expect(stored.frames[0].mapped).toMatchObject({ source: 'src/cart.ts', sourcemap: 'maps/bundle.map' })
  })
})
