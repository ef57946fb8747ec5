import { afterAll, describe, expect, test } from 'bun:test'
import { constants, deflateRawSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'
import { tappedCore } from './helpers'

// A beacon says its compression in the query (`?compression=`), which core reads with its names
// decoded. The relay must see the same compression core sees, or it writes the key into bytes that
// are not JSON text and core can no longer inflate them.
const { core, tap } = await tappedCore()

const events = (sessionId: string) => core.database.db.rows<{ event_name: string }>(sql`select event_name from events where session_id = ${sessionId}`)

/**
 * Raw deflate (which core accepts for `deflate`) whose first byte is "{": a final block of fixed
 * Huffman codes whose first literal is 0xEF, the start of a UTF-8 byte order mark.
 */
function rawDeflateStartingWithBrace(json: string): Uint8Array<ArrayBuffer> {
  const bytes = deflateRawSync(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]), { strategy: constants.Z_FIXED })
  expect(bytes[0]).toBe('{'.charCodeAt(0))
  return new Uint8Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
}

for (const [clientName, makeClient] of Object.entries({ socket: socketClient, fetch: () => fetchClient() })) {
  describe(`a query that names its compression percent-encoded, over ${clientName}`, () => {
    const relay = createRelay({ upstream: tap.url, prefix: '/_sl', client: makeClient() })

    test('the compressed body goes through untouched with its header, and core stores it as it would have without the relay', async () => {
      for (const [index, query] of ['?%63ompression=deflate', '?compressio%6E=deflate', '?x=1&%63ompression=deflate'].entries()) {
        const sessionId = `${clientName}-query-compression-${index}`
        const body = rawDeflateStartingWithBrace(JSON.stringify({ sessionId, eventName: 'beacon' }))
        const init = () => ({ method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'text/plain' }, body })
        // Core itself takes the name decoded: this body is valid deflate to it.
        expect((await core.request(`/api/ingestion/customEvent${query}`, init())).status).toBe(200)
        const res = await relay(new Request(`http://shop.test/_sl/api/ingestion/customEvent${query}`, init()), { address: '198.51.100.7' })
        const seen = tap.seen[tap.seen.length - 1]
        expect({ query, status: res.status, target: seen.target, authorization: seen.headers.authorization, untouched: Buffer.from(seen.body).equals(body) }).toEqual({
          query,
          status: 200,
          target: `/api/ingestion/customEvent${query}`,
          authorization: `Bearer ${core.key}`,
          untouched: true,
        })
        expect(await events(sessionId)).toEqual([{ event_name: 'beacon' }, { event_name: 'beacon' }])
      }
    })

    test('a plain JSON body with an ordinary query still takes the key', async () => {
      const sessionId = `${clientName}-query-plain`
      const body = JSON.stringify({ sessionId, eventName: 'plain' })
      const res = await relay(new Request(`http://shop.test/_sl/api/ingestion/customEvent?v=1`, { method: 'POST', headers: { authorization: `Bearer ${core.key}` }, body }), { address: '198.51.100.7' })
      expect(res.status).toBe(200)
      const seen = tap.seen[tap.seen.length - 1]
      expect(seen.headers.authorization).toBeUndefined()
      expect(new TextDecoder().decode(seen.body)).toBe(`{"apiKey":${JSON.stringify(core.key)},${body.slice(1)}`)
    })
  })
}
