import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { sql } from 'drizzle-orm'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'

// A path means one thing to the router, the body limits and readers, CORS, `Allow` and the log.
const SECRET = 'internal-secret-for-tests-0123456789'
const { log, lines } = memoryLogger('info')
let core: TestCore
beforeAll(async () => {
  core = await startCore({ env: { INTERNAL_SECRET: SECRET }, log })
})
afterAll(() => core.close())

const MAP = { version: 3, file: 'app.js', sources: ['app.ts'], names: [], mappings: 'AAAA' }
/** A body each route would store, sent to its path with a trailing slash. */
const SLASHED: { path: string; body: object }[] = [
  { path: '/api/ingestion/events/', body: { sessionId: 'slash-rp', events: [{ type: 3, timestamp: 1_700_000_000_000, data: { source: 1 } }] } },
  { path: '/api/ingestion/customEvent/', body: { sessionId: 'slash-ce', eventName: 'e' } },
  { path: '/api/ingestion/customEvent/batch/', body: { sessionId: 'slash-cb', events: [{ eventName: 'a' }] } },
  { path: '/api/ingestion/init/', body: { sessionId: 'slash-init', endUserId: 'slash-user' } },
  { path: '/api/ingestion/logs/', body: { sessionId: 'slash-log', logs: [{ level: 'info', message: 'm', url: 'https://shop.test/', timestampMs: 1_700_000_000_000 }] } },
  { path: '/api/ingestion/sourcemaps/', body: { release: 'slash@1', files: [{ name: 'app.js.map', content: MAP }] } },
  { path: '/api/internal/scan-findings/', body: { findings: [{ ruleId: 'r', severity: 'low', file: 'a.ts', message: 'm' }] } },
  { path: '/health/', body: {} },
  { path: '/health/simple/', body: {} },
  { path: '//', body: {} },
]

/** Rows in every table: what a request stored, wherever it would have gone. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await core.database.db.rows<{ name: string }>(
    sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  )
  const counts: Record<string, number> = {}
  for (const { name } of tables) counts[name] = (await core.database.db.rows<{ n: number }>(sql.raw(`select count(*)::int as n from "${name}"`)))[0].n
  return counts
}

const headers = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${core.key}`,
  'x-internal-secret': SECRET,
  origin: 'https://shop.test',
  ...extra,
})

const expectNotFound = async (res: Response, label: string) => {
  expect([label, res.status]).toEqual([label, 404])
  if (res.status !== 404) return
  expect(await res.json()).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } })
}

describe('a path with a trailing slash is not the route without it', () => {
  test('404 not_found for every method, preflight included; nothing stored', async () => {
    const before = await rowCounts()
    for (const { path, body } of SLASHED) {
      const withProject = path.startsWith('/api/internal/') ? { ...body, projectId: core.project.projectId } : body
      await expectNotFound(await core.request(path, { method: 'POST', headers: headers(), body: JSON.stringify(withProject) }), `POST ${path}`)
      await expectNotFound(await core.request(path, { method: 'OPTIONS', headers: headers({ 'access-control-request-method': 'POST' }) }), `OPTIONS ${path}`)
      await expectNotFound(await core.request(path, { headers: headers() }), `GET ${path}`)
      expect([path, (await core.request(path, { method: 'HEAD' })).status]).toEqual([path, 404])
    }
    expect(await rowCounts()).toEqual(before)
    // The same bodies on the paths as spelled store (so the bodies were not what was refused).
    expect((await core.post('/api/ingestion/customEvent', SLASHED[1].body)).status).toBe(200)
  })

  test('the body of an unknown path is not read', async () => {
    for (const path of ['/api/ingestion/events/', '/api/ingestion/customEvent/', '/api/ingestion/sourcemaps/']) {
      const request = new Request(`http://localhost${path}`, {
        method: 'POST',
        headers: headers(),
        body: new ReadableStream({ pull: (c) => (c.enqueue(new TextEncoder().encode('{"sessionId":"unread"}')), c.close()) }),
      })
      await expectNotFound(await core.app.handle(request), path)
      expect([path, request.bodyUsed]).toEqual([path, false])
    }
  })

  test('over a socket: 404 at once, however large a body it announces', async () => {
    const { port } = new URL(await core.listen())
    for (const path of ['/api/ingestion/events/', '/api/ingestion/customEvent/']) {
      const answer = await new Promise<string>((resolve) => {
        let received = ''
        const socket = connect(Number(port), '127.0.0.1', () =>
          socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${core.key}\r\nContent-Length: 3000000\r\nConnection: close\r\n\r\n{"sessionId":`),
        )
        socket.on('data', (chunk) => (received += chunk))
        socket.on('close', () => resolve(received))
        setTimeout(() => socket.destroy(), 2000)
      })
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found')
      expect(answer).toContain('"code":"not_found"')
    }
  })

  test('the request log says the path as sent and its 404', async () => {
    lines.length = 0
    await core.request('/api/ingestion/customEvent/', { method: 'POST', headers: headers(), body: '{"sessionId":"logged","eventName":"e"}' })
    await core.request('/api/ingestion/customEvent/', { method: 'OPTIONS', headers: headers() })
    await Bun.sleep(10)
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request')
    expect(requests.map(({ method, path, status }) => ({ method, path, status }))).toEqual([
      { method: 'POST', path: '/api/ingestion/customEvent/', status: 404 },
      { method: 'OPTIONS', path: '/api/ingestion/customEvent/', status: 404 },
    ])
  })
})

describe('Allow', () => {
  const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

  test('every route: each method in a 405 `Allow` is answered, each other method is 405 with the same `Allow`', async () => {
    const paths = [...new Set(core.app.routes.map((route) => route.path).filter((path) => !path.includes('*')))]
    expect(paths).toEqual(expect.arrayContaining(['/', '/health', '/health/simple', '/api/ingestion/events', '/api/internal/scan-findings']))
    for (const path of paths) {
      const allow = (await core.request(path, { method: 'PUT', headers: headers() })).headers.get('allow')
      expect([path, allow]).toEqual([path, expect.any(String)])
      const allowed = allow!.split(', ')
      for (const method of METHODS) {
        const res = await core.request(path, { method, headers: headers({ 'access-control-request-method': 'POST' }), body: method === 'POST' ? '{}' : undefined })
        if (allowed.includes(method)) expect([path, method, res.status === 404 || res.status === 405 ? res.status : 'answered']).toEqual([path, method, 'answered'])
        else expect([path, method, res.status, res.headers.get('allow')]).toEqual([path, method, 405, allow])
      }
    }
  })

  test('what each kind of path serves', async () => {
    const allowOf = async (path: string) => (await core.request(path, { method: 'DELETE' })).headers.get('allow')
    expect(await allowOf('/')).toBe('GET, HEAD, OPTIONS')
    expect(await allowOf('/health')).toBe('GET, HEAD, OPTIONS')
    expect(await allowOf('/health/simple')).toBe('GET, HEAD, OPTIONS')
    expect(await allowOf('/api/ingestion/customEvent')).toBe('POST, OPTIONS')
    // Not for browsers: no preflight, so OPTIONS is a method it does not serve.
    expect(await allowOf('/api/internal/scan-findings')).toBe('POST')
    const preflight = await core.request('/api/internal/scan-findings', { method: 'OPTIONS', headers: headers({ 'access-control-request-method': 'POST' }) })
    expect([preflight.status, preflight.headers.get('allow'), preflight.headers.get('access-control-allow-origin')]).toEqual([405, 'POST', null])
  })
})
