import { afterAll, expect, test } from 'bun:test'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { elysiaRelay } from '@sightline/relay/adapters/elysia'
import { nodeRelay } from '@sightline/relay/adapters/node'
import { Elysia } from 'elysia'
import { tappedCore } from './helpers'

// The relay mounted inside a site the way sites are written: other middleware and hooks run before it.
const { core, tap } = await tappedCore()

/** What express.json() (body-parser) does: reads a JSON body whole, then sets `req.body` and `req._body`. */
function jsonBodyParser(req: IncomingMessage & { body?: unknown; _body?: boolean }, _res: ServerResponse, next: () => void): void {
  if (!String(req.headers['content-type']).includes('json')) return next()
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    req._body = true
    req.body = JSON.parse(Buffer.concat(chunks).toString())
    next()
  })
}

test('node middleware behind a body parser that read the body first: 500 body_already_read, core not contacted, neither an empty batch nor a 502 blaming core', async () => {
  const relay = nodeRelay({ upstream: tap.url, prefix: '/_sl' })
  const site = createServer((req, res) => jsonBodyParser(req, res, () => relay(req, res, () => res.end('the site'))))
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${(site.address() as { port: number }).port}`
    const before = tap.seen.length
    const answers = []
    // A small body (read to take the key) and one over 64 KB (streamed with its declared length).
    for (const padding of [1, 100_000]) {
      const body = JSON.stringify({ sessionId: 'parsed-first', events: [{ eventName: 'x'.repeat(padding) }] })
      const res = await fetch(`${url}/_sl/api/ingestion/events`, { method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' }, body })
      answers.push({ status: res.status, body: await res.json() })
    }
    expect(answers).toEqual(Array(2).fill({ status: 500, body: { success: false, error: { code: 'body_already_read', message: expect.stringContaining('before any body parser') } } }))
    expect(tap.seen.length).toBe(before)
    // The site's own JSON routes and the relay's bodiless paths are as they were.
    expect(await fetch(`${url}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then((res) => res.text())).toBe('the site')
    expect((await fetch(`${url}/_sl/health/simple`)).status).toBe(200)
  } finally {
    site.closeAllConnections()
    site.close()
  }
})

test("elysia plugin after a hook of the site that sets a cookie on every answer: the relay's answers carry no Set-Cookie, the site's still do", async () => {
  const app = new Elysia()
    .onRequest(({ set }) => {
      set.headers['set-cookie'] = 'site-session=abc; Path=/'
      set.headers['x-site'] = 'yes'
    })
    .use(elysiaRelay({ upstream: tap.url, prefix: '/_sl', script: { source: 'console.log("t")' } }))
    .get('/', () => 'the site')
    .listen({ port: 0, hostname: '127.0.0.1' })
  try {
    const url = `http://127.0.0.1:${app.server!.port}`
    for (const path of ['/_sl/health/simple', '/_sl/t.js', '/_sl/nothing']) {
      const res = await fetch(url + path)
      expect({ path, setCookie: res.headers.getSetCookie(), site: res.headers.get('x-site') }).toEqual({ path, setCookie: [], site: 'yes' })
    }
    expect((await fetch(`${url}/`)).headers.getSetCookie()).toEqual(['site-session=abc; Path=/'])
  } finally {
    await app.stop(true)
  }
})

test("elysia plugin after a hook of the site that spells its fields in capitals (Set-Cookie, Vary): the relay's answers still carry no cookie, and list both Vary", async () => {
  const app = new Elysia()
    .onRequest(({ set }) => {
      set.headers['Set-Cookie'] = 'site-session=abc; Path=/'
      set.headers['Vary'] = 'Origin'
    })
    .use(elysiaRelay({ upstream: tap.url, prefix: '/_sl', script: { source: 'console.log("t")' } }))
    .get('/', () => 'the site')
    .listen({ port: 0, hostname: '127.0.0.1' })
  try {
    const url = `http://127.0.0.1:${app.server!.port}`
    const answers = []
    for (const path of ['/_sl/health/simple', '/_sl/t.js', '/_sl/nothing']) {
      const res = await fetch(url + path)
      answers.push({ path, setCookie: res.headers.getSetCookie(), vary: res.headers.get('vary') })
    }
    expect(answers).toEqual([
      { path: '/_sl/health/simple', setCookie: [], vary: expect.stringMatching(/^Origin, /) },
      { path: '/_sl/t.js', setCookie: [], vary: 'Origin, Accept-Encoding' },
      { path: '/_sl/nothing', setCookie: [], vary: 'Origin' },
    ])
    expect((await fetch(`${url}/`)).headers.getSetCookie()).toEqual(['site-session=abc; Path=/'])
  } finally {
    await app.stop(true)
  }
})

test("elysia plugin after a site's CORS hook that varies on Origin: the relay's answers list the site's Vary and their own, as on Node", async () => {
  const app = new Elysia()
    .onRequest(({ set, request }) => {
      set.headers['access-control-allow-origin'] = request.headers.get('origin') ?? '*'
      set.headers.vary = 'Origin'
    })
    .use(elysiaRelay({ upstream: tap.url, prefix: '/_sl', script: { source: 'console.log("t")' } }))
    .get('/', () => 'the site')
    .listen({ port: 0, hostname: '127.0.0.1' })
  try {
    const url = `http://127.0.0.1:${app.server!.port}`
    const varies = []
    for (const path of ['/_sl/t.js', '/_sl/nothing']) varies.push([path, (await fetch(url + path, { headers: { origin: 'https://shop.test' } })).headers.get('vary')])
    // A cache keyed on Accept-Encoding alone served one origin's Access-Control-Allow-Origin to the next.
    expect(varies).toEqual([
      ['/_sl/t.js', 'Origin, Accept-Encoding'],
      ['/_sl/nothing', 'Origin'],
    ])
  } finally {
    await app.stop(true)
  }
})

test("elysia plugin after a hook of the site that sets a status: the relay's answers keep core's", async () => {
  const app = new Elysia()
    .onRequest(({ set }) => {
      set.status = 418
    })
    .use(elysiaRelay({ upstream: tap.url, prefix: '/_sl', script: { source: 'console.log("t")' } }))
    .get('/', () => 'the site')
    .listen({ port: 0, hostname: '127.0.0.1' })
  try {
    const url = `http://127.0.0.1:${app.server!.port}`
    const statuses = []
    for (const path of ['/_sl/health/simple', '/_sl/t.js', '/_sl/nothing']) statuses.push([path, (await fetch(url + path)).status])
    const refused = await fetch(`${url}/_sl/api/ingestion/customEvent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    statuses.push(['customEvent without a key', refused.status])
    expect(statuses).toEqual([
      ['/_sl/health/simple', 200],
      ['/_sl/t.js', 200],
      ['/_sl/nothing', 404],
      ['customEvent without a key', 401],
    ])
    expect((await fetch(`${url}/`)).status).toBe(418)
  } finally {
    await app.stop(true)
  }
})
