import { afterAll, describe, expect, test } from 'bun:test'
import { startCore } from '../helpers/core'
import { rawRequest, startRelay, startTap, type AdapterName } from './helpers'

// The relay is never an open proxy: raw request lines (no client-side normalization) against the
// real servers, with a recording hop in front of core to see what, if anything, got through.
const core = await startCore()
const coreUrl = await core.listen()
const tap = startTap(coreUrl)
// A second server the relay must never be talked into reaching.
const elsewhere = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('elsewhere') })
afterAll(async () => {
  tap.close()
  elsewhere.stop(true)
  await core.close()
})

const other = `127.0.0.1:${elsewhere.port}`

/** Request targets that try to leave the prefix, the public paths, or the configured upstream. */
const ATTEMPTS = [
  '/_sl/../api/projects',
  '/_sl/..%2fapi/projects',
  '/_sl/%2e%2e/api/internal/scan-findings',
  '/_sl/api/ingestion/..%2F..%2Fapi%2Finternal%2Fscan-findings',
  '/_sl/api/ingestion/%2e%2e/%2e%2e/api/projects',
  '/_sl/api/ingestion/customEvent/..;/..;/api/projects',
  '/_sl/api/ingestion\\..\\..\\api\\projects',
  '/_sl//api/ingestion/customEvent',
  `/_sl//${other}/health`,
  `/_sl/http://${other}/health`,
  `/_sl/http:%2F%2F${other}%2Fhealth`,
  '/_sl/api/ingestion/%63ustomEvent',
  '/_sl/api/internal/scan-findings',
  '/_slx/health',
  '/health',
]

for (const adapter of ['bun', 'node', 'elysia'] as AdapterName[]) {
  describe(`${adapter}: no way out of the public paths`, () => {
    let relay: Awaited<ReturnType<typeof startRelay>>
    test('starts', async () => {
      relay = await startRelay(adapter, { upstream: tap.url, prefix: '/_sl' })
    })
    afterAll(() => relay?.close())

    for (const target of ATTEMPTS) {
      test(`${target} reaches nothing but core's public paths`, async () => {
        const before = tap.seen.length
        const { status } = await rawRequest(relay.url, `GET ${target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        const reached = tap.seen.slice(before).map((r) => r.target)
        // Either refused, or (where the server normalized dot segments itself) a public path on core.
        for (const path of reached) expect(['/health', '/health/simple'].includes(path) || path.startsWith('/api/ingestion/')).toBe(true)
        if (reached.length === 0) expect(status).toBeGreaterThanOrEqual(400)
      })
    }

    test('an absolute-form request target still goes to the configured upstream only', async () => {
      const before = tap.seen.length
      const { status, text } = await rawRequest(relay.url, `GET http://${other}/_sl/health/simple HTTP/1.1\r\nHost: ${other}\r\nConnection: close\r\n\r\n`)
      expect(text).not.toContain('elsewhere')
      if (status === 200) expect(tap.seen.slice(before).map((r) => r.target)).toEqual(['/health/simple'])
    })

    test('CONNECT and TRACE are refused', async () => {
      const before = tap.seen.length
      for (const line of [`CONNECT ${other} HTTP/1.1`, 'TRACE /_sl/health HTTP/1.1']) {
        const { status, text } = await rawRequest(relay.url, `${line}\r\nHost: shop.test\r\nConnection: close\r\n\r\n`)
        // An error status, or (node:http, which hands CONNECT to a 'connect' listener there is none of) the connection closed unanswered.
        if (status !== 0) expect(status).toBeGreaterThanOrEqual(400)
        expect(text).not.toContain('elsewhere')
      }
      expect(tap.seen.length).toBe(before)
    })
  })
}
