import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { sql } from 'drizzle-orm'
import { startCore, type TestCore } from '../helpers/core'

// Requests as a hostile or unusual client (or a proxy in front of core) writes them, over a real
// socket: Bun's server and Elysia's request handling are in the path, not only app.handle.
let core: TestCore
let port: number
beforeAll(async () => {
  core = await startCore()
  port = Number(new URL(await core.listen()).port)
})
afterAll(() => core.close())

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** Sends raw bytes and parses what came back before the server closed or 2 s passed. */
function rawExchange(request: string): Promise<RawAnswer> {
  return new Promise((resolve) => {
    let answer = ''
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    socket.on('data', (chunk) => (answer += chunk))
    socket.on('close', () => {
      const [head, ...rest] = answer.split('\r\n\r\n')
      const [statusLine, ...fields] = head.split('\r\n')
      const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') })
    })
    setTimeout(() => socket.destroy(), 2000)
  })
}

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
    expect({ status: res.status, body: res.body }).toEqual({ status: 204, body: '' })
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example')
    expect(res.headers['access-control-allow-methods']).toBe('POST, GET, OPTIONS')
  })

  test('control: the same preflight with `Host: core` is 204', async () => {
    expect((await rawExchange(preflight('Host: core\r\n'))).status).toBe(204)
  })

  test('a POST Bun resolves (`/api/ingestion/./customEvent`) is answered as with a longer Host, never a 405 whose Allow lists POST', async () => {
    const send = (host: string, sessionId: string) => {
      const body = JSON.stringify({ sessionId, eventName: 'e' })
      return rawExchange(
        `POST /api/ingestion/./customEvent HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${core.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      )
    }
    const long = await send('core', 'dot-long-host')
    expect({ status: long.status, body: long.body }).toEqual({ status: 200, body: '{"success":true}' })
    const short = await send('api', 'dot-short-host')
    expect({ status: short.status, allow: short.headers.allow as string | undefined, body: short.body }).toEqual({ status: 200, allow: undefined, body: '{"success":true}' })
    expect(await core.database.db.rows(sql`select session_id from events where session_id like 'dot-%' order by 1`)).toEqual([
      { session_id: 'dot-long-host' },
      { session_id: 'dot-short-host' },
    ])
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
