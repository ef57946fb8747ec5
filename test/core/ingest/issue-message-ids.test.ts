import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startCore, type TestCore } from '../../helpers/core'

/*
 * What an Issue's message masks (README, Grouping): an id in a message is one of many, so two
 * reports that differ only by it are one Issue; a word or an error code people group by is not.
 * Also a served file's folder of eight capitals, which is a name, not a build hash.
 */

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const issueOf = async (report: { message: string; stack?: string; name?: string }): Promise<string> => {
  const res = await core.post('/api/ingestion/errors', {
    sessionId: 'message-ids',
    endUserId: 'user-mi',
    name: 'Error',
    url: 'https://shop.example/checkout',
    timestampMs: Date.now(),
    ...report,
  })
  expect(res.status).toBe(200)
  return ((await res.json()) as { issues: string[] }).issues[0]
}

/** Reports without a stack: the message groups them. */
const sameIssue = async (a: string, b: string) => (await issueOf({ message: a })) === (await issueOf({ message: b }))

describe('ids in a message are masked', () => {
  test.each([
    ['an underscore prefix with a hex tail', 'Order ord_9f8e7d6c5b not found', 'Order ord_1a2b3c4d5e not found'],
    ['an underscore prefix with a mixed-case tail', 'Customer cus_NffrFeUfNV2Hib has no card', 'Customer cus_Lq8Zt0PbXy3Wke has no card'],
    ['a dash prefix with a short mixed tail', 'Session sess-a1b2c3 expired', 'Session sess-z9y8x7 expired'],
    ['a short code of capitals and digits', 'Coupon K7XP2Q has expired', 'Coupon 3MZQ8R has expired'],
    ['a mixed-case id of letters and digits', 'Cart V1StGXR8Z5jdHi6B is locked', 'Cart q2Wm7KxP4nR9tB0s is locked'],
  ])('%s: two ids are one Issue', async (_, a, b) => {
    expect(await sameIssue(a, b)).toBe(true)
  })

  test.each([
    ['a prefixed id keeps its prefix', 'Lookup failed for ord_9f8e7d6c5b', 'Lookup failed for cus_9f8e7d6c5b'],
    ['an error code', 'net::ERR_NETWORK_CHANGED', 'net::ERR_NAME_NOT_RESOLVED'],
    ['a code of capitals and a number, not read as an id', 'Write failed: E11000', 'Write failed: K7XP2Q'],
    ['a prefixed code of capitals and a number', 'Handshake failed: ERR_HTTP2', 'Handshake failed: ERR_TLS13'],
    ['a word with a number in it', 'expected a Uint8Array', 'expected a Float32Array'],
    ['a system error', 'read ECONNRESET', 'read ETIMEDOUT'],
    ['an error name in a message', 'TypeError in handler', 'RangeError in handler'],
  ])('%s stays: two of them are two Issues', async (_, a, b) => {
    expect(await sameIssue(a, b)).toBe(false)
  })

  test('numbers still mask as before: HTTP 404 and HTTP 500 are one Issue, E11000 and E11001 one', async () => {
    expect(await sameIssue('Request failed: HTTP 404', 'Request failed: HTTP 500')).toBe(true)
    expect(await sameIssue('MongoError E11000 duplicate key', 'MongoError E11001 duplicate key')).toBe(true)
  })
})

describe('a served file in a folder of eight capitals', () => {
  // Minified (no readable function), so the file and the message group it.
  const stack = (path: string) => `TypeError: Cannot read properties of undefined (reading 'total')
    at e (https://shop.example${path}:1:2045)`
  const report = (path: string) => ({ name: 'TypeError', message: "Cannot read properties of undefined (reading 'total')", stack: stack(path) })

  test('is a name, not a build hash: /CHECKOUT/app.js and /SETTINGS/app.js are two Issues', async () => {
    expect(await issueOf(report('/CHECKOUT/app.js'))).not.toBe(await issueOf(report('/SETTINGS/app.js')))
    // And not the file without a folder either.
    expect(await issueOf(report('/CHECKOUT/app.js'))).not.toBe(await issueOf(report('/app.js')))
  })

  test("esbuild's hash of capitals after a name still drops: chart-QWERTYUI.js and chart-ZZPLMKAB.js are one Issue", async () => {
    expect(await issueOf(report('/assets/chart-QWERTYUI.js'))).toBe(await issueOf(report('/assets/chart-ZZPLMKAB.js')))
    // A hex build folder still drops too.
    expect(await issueOf(report('/3f2a1b9c/app.js'))).toBe(await issueOf(report('/77e0d1aa/app.js')))
  })
})
