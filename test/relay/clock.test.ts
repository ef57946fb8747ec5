import { afterEach, describe, expect, setSystemTime, test } from 'bun:test'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { startSilentUpstream } from './helpers'

/*
 * The system clock is stepped while requests are in flight (NTP correcting a clock, a virtual machine
 * resumed from a snapshot). How long core may stay silent is a duration: an hour set back must not
 * leave a silent core waited on for that hour, nor an hour set ahead fail every request at once.
 */

const CLIENTS = { socket: socketClient, fetch: () => fetchClient() }
const HOUR_MS = 3_600_000

afterEach(() => setSystemTime())

/** The answer's status, or "none" if there is none within `limitMs`. */
const statusWithin = (answer: Promise<Response>, limitMs: number) =>
  Promise.race([answer.then((res) => res.status), Bun.sleep(limitMs).then(() => 'none' as const)])

for (const [clientName, makeClient] of Object.entries(CLIENTS)) {
  describe(`a clock stepped while core is waited on, over ${clientName}`, () => {
    test('set back an hour: a silent core still times out after timeoutMs', async () => {
      const upstream = startSilentUpstream()
      try {
        const relay = createRelay({ upstream: upstream.url, prefix: '/_sl', client: makeClient(), timeoutMs: 300 })
        const answer = relay(new Request('http://shop.test/_sl/health'))
        await Bun.sleep(50)
        setSystemTime(new Date(Date.now() - HOUR_MS))
        expect(await statusWithin(answer, 2_000)).toBe(504)
      } finally {
        upstream.close()
      }
    })

    test('set ahead an hour: a request core answers within timeoutMs is answered, not failed with 504', async () => {
      // Core answers each request 300 ms after it arrives.
      const upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: async () => (await Bun.sleep(300), new Response('ok')) })
      try {
        const relay = createRelay({ upstream: `http://127.0.0.1:${upstream.port}`, prefix: '/_sl', client: makeClient(), timeoutMs: 2_000 })
        const answer = relay(new Request('http://shop.test/_sl/health'))
        await Bun.sleep(50)
        setSystemTime(new Date(Date.now() + HOUR_MS))
        expect(await statusWithin(answer, 3_000)).toBe(200)
      } finally {
        upstream.stop(true)
      }
    })
  })
}
