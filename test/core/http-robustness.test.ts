import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../helpers/core'
import { rawRequest } from '../helpers/raw-http'

// Requests as a hostile or unusual client (or a proxy in front of core) writes them, over a real
// socket: Bun's server and Elysia's request handling are in the path, not only app.handle.
let core: TestCore
let url: string
beforeAll(async () => {
  core = await startCore()
  url = await core.listen()
})
afterAll(() => core.close())

const rawExchange = (request: string) => rawRequest(url, request)

// Elysia finds a request's path by searching for the first '/' from the 12th character of its URL
// (its `standardHostname` shortcut, which assumes a host of at least four characters): with a
// shorter Host every request that Bun's own static routes do not take (preflight, a path Bun had
// to resolve) was routed, limited and answered by the wrong path. A reverse proxy sends its
// upstream's name as Host (nginx's `proxy_pass http://api;`), and a Docker service is often named so.
describe('whatever the Host', () => {
  const preflight = (hostLine: string) =>
    `OPTIONS /api/ingestion/customEvent HTTP/1.1\r\n${hostLine}Origin: https://shop.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n`

  test.each([['Host: api\r\n'], ['Host: sl\r\n'], ['Host: a:1\r\n']])('preflight on an ingestion path with %j is 204 with the WIRE.md headers', async (hostLine) => {
    const res = await rawExchange(preflight(hostLine))
    expect({ status: res.status, body: res.text }).toEqual({ status: 204, body: '' })
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example')
    expect(res.headers['access-control-allow-methods']).toBe('POST, GET, OPTIONS')
  })

  test('control: the same preflight with `Host: core` is 204', async () => {
    expect((await rawExchange(preflight('Host: core\r\n'))).status).toBe(204)
  })

  test('a POST Bun resolves (`/api/ingestion/./customEvent`) is answered as with a longer Host, never a 405 whose Allow lists POST', async () => {
    const send = (host: string, sessionId: string) => {
      const body = JSON.stringify({ sessionId, endUserId: `${sessionId}-u`, eventName: 'e' })
      return rawExchange(
        `POST /api/ingestion/./customEvent HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${core.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      )
    }
    const long = await send('core', 'dot-long-host')
    expect({ status: long.status, body: long.text }).toEqual({ status: 200, body: '{"success":true}' })
    const short = await send('api', 'dot-short-host')
    expect({ status: short.status, allow: short.headers.allow as string | undefined, body: short.text }).toEqual({ status: 200, allow: undefined, body: '{"success":true}' })
    expect(await core.database.db.rows(sql`select session_id from events where session_id like 'dot-%' order by 1`)).toEqual([
      { session_id: 'dot-long-host' },
      { session_id: 'dot-short-host' },
    ])
  })
})

// HTTP/1.0 allows a request without a Host (an old load balancer's health check, a hand-written
// client); Bun then hands core the request's target as its URL, a bare path. Errors were answered by
// parsing that as a whole URL, which threw inside the error handler: Bun's development page, with
// core's source code and stack, went to the client as a 500.
describe('without a Host (HTTP/1.0)', () => {
  const hostless = (head: string) => rawExchange(`${head} HTTP/1.0\r\n\r\n`)

  test('an unknown path is 404 and a known path with a method it does not serve 405, in WIRE.md\'s shape', async () => {
    const unknown = await hostless('GET /nothing/here')
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.text)).toEqual({ success: false, error: { code: 'not_found', message: 'no route for /nothing/here' } })
    const wrongMethod = await hostless('GET /api/ingestion/customEvent')
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.allow).toBe('POST, OPTIONS')
    expect(JSON.parse(wrongMethod.text)).toMatchObject({ success: false, error: { code: 'method_not_allowed' } })
  })

  test('a preflight on an ingestion path is 204 with the WIRE.md headers', async () => {
    const res = await rawExchange('OPTIONS /api/ingestion/customEvent HTTP/1.0\r\nOrigin: https://shop.example\r\nAccess-Control-Request-Method: POST\r\n\r\n')
    expect(res.status).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example')
    expect(res.headers['access-control-allow-methods']).toBe('POST, GET, OPTIONS')
  })

  test('health answers, and a custom event is stored', async () => {
    expect((await hostless('GET /health/simple')).status).toBe(200)
    const body = JSON.stringify({ sessionId: 'hostless-session', eventName: 'hostless' })
    const res = await rawExchange(
      `POST /api/ingestion/customEvent HTTP/1.0\r\nAuthorization: Bearer ${core.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    )
    expect(res.status).toBe(200)
    const stored = await core.database.db.rows(sql`select session_id from events where session_id = 'hostless-session'`)
    expect(stored).toHaveLength(1)
  })
})

describe('multipart source-map upload', () => {
  // RFC 9110 §8.3.1: the type and subtype of a media type are case-insensitive.
  test('a Content-Type of `Multipart/Form-Data` is a multipart upload, stored like the lowercase one', async () => {
    const map = JSON.stringify({ version: 3, sources: ['app.ts'], names: [], mappings: 'AAAA' })
    const body =
      `--B\r\nContent-Disposition: form-data; name="release"\r\n\r\ncase@1\r\n` +
      `--B\r\nContent-Disposition: form-data; name="file"; filename="app.js.map"\r\n\r\n${map}\r\n--B--\r\n`
    const res = await core.request('/api/ingestion/sourcemaps', {
      method: 'POST',
      headers: { authorization: `Bearer ${core.key}`, 'content-type': 'Multipart/Form-Data; boundary=B' },
      body,
    })
    expect(await res.json()).toEqual({ success: true, stored: ['app.js.map'] })
    expect(res.status).toBe(200)
  })
})
