import { expect, test } from 'bun:test'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, createServer as createHttp2Server, type ClientHttp2Session, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import { sql } from 'drizzle-orm'
import { nodeRelay } from '@sightline/relay/adapters/node'
import { tappedCore } from './helpers'

// The Node adapter mounted the ways a site mounts it: on node:http2's compatibility API, and as
// middleware behind the site's own, which set headers on every answer before the relay runs.
const { core, tap } = await tappedCore()

type Relay = ReturnType<typeof nodeRelay>
const asNode = (relay: Relay) => relay as unknown as (req: Http2ServerRequest, res: Http2ServerResponse, next?: () => void) => void

/** One HTTP/2 exchange, given up after 5 s (a listener that threw leaves the stream open). */
function h2Request(session: ClientHttp2Session, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers)
    const timer = setTimeout(() => reject(new Error(`no answer to ${headers[':method']} ${headers[':path']}`)), 5000)
    let status = 0
    let text = ''
    stream.on('response', (answer) => (status = Number(answer[':status'])))
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => (text += chunk))
    stream.on('end', () => (clearTimeout(timer), resolve({ status, body: text })))
    stream.on('error', (error) => (clearTimeout(timer), reject(error)))
    stream.end(body)
  })
}

test('node:http2 compatibility server: an event is relayed and stored (pseudo-headers are no header fields; :authority is the Host), and other paths go on to the site', async () => {
  const relay = nodeRelay({ upstream: tap.url, prefix: '/_sl' })
  const site = createHttp2Server((req, res) => asNode(relay)(req, res, () => res.end('the site')))
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  const authority = `127.0.0.1:${(site.address() as { port: number }).port}`
  const session = connect(`http://${authority}`)
  try {
    const before = tap.seen.length
    const event = await h2Request(
      session,
      { ':method': 'POST', ':path': '/_sl/api/ingestion/customEvent', authorization: `Bearer ${core.key}`, 'content-type': 'application/json' },
      JSON.stringify({ sessionId: 'node-http2', endUserId: 'node-http2-u', eventName: 'over-h2' }),
    )
    const health = await h2Request(session, { ':method': 'GET', ':path': '/_sl/health/simple' })
    const other = await h2Request(session, { ':method': 'GET', ':path': '/shop' })
    expect([event, health.status, other]).toEqual([{ status: 200, body: '{"success":true}' }, 200, { status: 200, body: 'the site' }])
    const [seen] = tap.seen.slice(before)
    expect(seen.headers['x-forwarded-host']).toBe(authority)
    expect(Object.keys(seen.headers).filter((name) => name.startsWith(':'))).toEqual([])
    expect(JSON.parse(new TextDecoder().decode(seen.body))).toEqual({ apiKey: core.key, sessionId: 'node-http2', endUserId: 'node-http2-u', eventName: 'over-h2' })
    expect(await core.database.db.rows(sql`select 1 from events where session_id = 'node-http2'`)).toHaveLength(1)
  } finally {
    session.close()
    site.close()
  }
})

/** Middleware of the site that runs before the relay on every request, as cookie, cache and security middleware do. */
function siteHeaders(_req: IncomingMessage, res: ServerResponse, next: () => void): void {
  res.setHeader('Set-Cookie', 'site-session=abc; Path=/; HttpOnly')
  res.setHeader('Cache-Control', 'private, no-cache')
  res.setHeader('Content-Type', 'text/html; charset=utf-8')
  res.setHeader('Vary', 'Cookie')
  res.setHeader('X-Frame-Options', 'DENY')
  next()
}

test("node middleware behind the site's own that set headers: the relay's answers carry no Set-Cookie, their own fields replace the site's, the site's others stay, Vary lists both", async () => {
  const relay = nodeRelay({ upstream: tap.url, prefix: '/_sl', script: { source: 'console.log("t")' } })
  const site = createServer((req, res) => siteHeaders(req, res, () => relay(req, res, () => res.end('the site'))))
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${(site.address() as { port: number }).port}`
    const answers = []
    for (const path of ['/_sl/health/simple', '/_sl/t.js', '/_sl/nothing']) {
      const res = await fetch(url + path, { headers: { 'accept-encoding': 'identity' } })
      await res.arrayBuffer()
      answers.push({ path, setCookie: res.headers.getSetCookie(), cacheControl: res.headers.get('cache-control'), contentType: res.headers.get('content-type'), vary: res.headers.get('vary'), frame: res.headers.get('x-frame-options') })
    }
    const script = 'public, max-age=300, stale-while-revalidate=86400'
    expect(answers).toEqual([
      // Core's answer has no Cache-Control of its own: the site's applies, as to the site's other answers.
      { path: '/_sl/health/simple', setCookie: [], cacheControl: 'private, no-cache', contentType: 'application/json;charset=utf-8', vary: 'Cookie, Origin', frame: 'DENY' },
      { path: '/_sl/t.js', setCookie: [], cacheControl: script, contentType: 'text/javascript; charset=utf-8', vary: 'Cookie, Accept-Encoding', frame: 'DENY' },
      { path: '/_sl/nothing', setCookie: [], cacheControl: 'no-store', contentType: 'application/json', vary: 'Cookie', frame: 'DENY' },
    ])
    // The site's own answers keep what its middleware set.
    expect((await fetch(`${url}/`)).headers.getSetCookie()).toEqual(['site-session=abc; Path=/; HttpOnly'])
  } finally {
    site.closeAllConnections()
    site.close()
  }
})
