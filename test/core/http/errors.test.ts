import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { ERROR_STATUS, ApiError } from '@sightline/core/errors'
import { errorHandler, escapedErrorHandler } from '@sightline/core/http/errors'
import { memoryLogger, startCore, type TestCore } from '../../helpers/core'

let core: TestCore
beforeAll(async () => {
  core = await startCore()
})
afterAll(() => core.close())

const expectErrorShape = async (res: Response, status: number, code: string) => {
  expect(res.status).toBe(status)
  expect(res.headers.get('content-type')).toContain('application/json')
  const body = await res.json()
  expect(body).toEqual({ success: false, error: { code, message: expect.any(String) } })
  return body
}

describe('errors', () => {
  test('unknown paths are 404 not_found', async () => {
    await expectErrorShape(await core.request('/api/ingestion/nope', { method: 'POST', body: '{}' }), 404, 'not_found')
    await expectErrorShape(await core.request('/wp-admin'), 404, 'not_found')
  })

  test('a wrong method on a known path is 405 with Allow', async () => {
    const res = await core.request('/health', { method: 'POST', body: '{}' })
    await expectErrorShape(res, 405, 'method_not_allowed')
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
  })

  test('every code has one status, as WIRE.md lists them', () => {
    expect(ERROR_STATUS).toMatchObject({
      invalid_json: 400,
      validation_failed: 400,
      missing_api_key: 401,
      invalid_api_key: 401,
      not_found: 404,
      method_not_allowed: 405,
      payload_too_large: 413,
      monthly_limit_reached: 429,
      storage_unavailable: 503,
      overloaded: 503,
    })
  })

  test('a crash is a 500 in the error shape; the stack is logged, never sent', async () => {
    const { log, lines } = memoryLogger()
    const app = new Elysia()
      .use(errorHandler(log, () => new Map()))
      .get('/boom', () => {
        throw new TypeError('secret internals at line 42')
      })
    const res = await app.handle(new Request('http://localhost/boom'))
    const body = await expectErrorShape(res, 500, 'internal_error')
    expect(JSON.stringify(body)).not.toContain('secret internals')
    expect(lines.join('')).toContain('secret internals')
  })

  test('an error that escapes the error hook itself is a 500 in the error shape, not Bun\'s page of source code', async () => {
    const { log, lines } = memoryLogger()
    const app = new Elysia({ serve: { development: false, error: escapedErrorHandler(log) } })
      .onError(() => {
        throw new TypeError('secret internals of the error hook')
      })
      .get('/boom', () => {
        throw new Error('boom')
      })
      .listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const res = await fetch(`http://127.0.0.1:${app.server!.port}/boom`)
      const body = await expectErrorShape(res, 500, 'internal_error')
      expect(JSON.stringify(body)).not.toContain('secret internals')
      expect(lines.join('')).toContain('secret internals of the error hook')
    } finally {
      await app.stop(true)
    }
    // Core's server is made so.
    expect(core.app.config.serve).toMatchObject({ development: false, error: expect.any(Function) })
  })

  test('a failed query that escaped is logged by its cause and where it was thrown, not with the values it was given', async () => {
    const { log, lines } = memoryLogger()
    const app = new Elysia()
      .use(errorHandler(log, () => new Map()))
      .get('/query', () => {
        // Drizzle's error: the statement and its parameters (what a request sent), the database's reason as the cause.
        throw new Error('Failed query: insert into end_users values ($1)\nparams: ada@private.example', { cause: new Error('relation "end_users" does not exist') })
      })
    await expectErrorShape(await app.handle(new Request('http://localhost/query')), 500, 'internal_error')
    const logged = lines.join('')
    expect(logged).not.toContain('ada@private.example')
    expect(logged).toContain('relation \\"end_users\\" does not exist')
    expect(logged).toContain('errors.test.ts')
  })

  test('ApiError details become Retry-After, path and extra members', async () => {
    const app = new Elysia()
      .use(errorHandler(memoryLogger().log, () => new Map()))
      .get('/busy', () => {
        throw new ApiError('overloaded', 'try later', { retryAfterSeconds: 3 })
      })
      .get('/quota', () => {
        throw new ApiError('monthly_limit_reached', 'over', { body: { monthlyLimitReached: true } })
      })
    const busy = await app.handle(new Request('http://localhost/busy'))
    expect(busy.status).toBe(503)
    expect(busy.headers.get('retry-after')).toBe('3')
    const quota = await app.handle(new Request('http://localhost/quota'))
    expect(await quota.json()).toEqual({ success: false, error: { code: 'monthly_limit_reached', message: 'over' }, monthlyLimitReached: true })
  })
})

describe('CORS', () => {
  test('preflight on a public path is 204 with the WIRE.md headers', async () => {
    const res = await core.request('/health', { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('https://shop.example')
    expect(res.headers.get('access-control-allow-methods')).toBe('POST, GET, OPTIONS')
    expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, Content-Encoding')
    expect(res.headers.get('access-control-max-age')).toBe('86400')
    expect(res.headers.get('vary')).toBe('Origin')
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
  })

  test('answers, errors included, reflect the Origin and expose Retry-After and Deprecation', async () => {
    for (const res of [
      await core.request('/health', { headers: { origin: 'https://a.example' } }),
      await core.request('/api/ingestion/nope', { method: 'POST', body: '{}', headers: { origin: 'https://a.example' } }),
    ]) {
      expect(res.headers.get('access-control-allow-origin')).toBe('https://a.example')
      expect(res.headers.get('access-control-expose-headers')).toBe('Retry-After, Deprecation')
      expect(res.headers.get('vary')).toBe('Origin')
    }
  })

  test('the dashboard API is not opened to other origins', async () => {
    const res = await core.request('/api/projects', { headers: { origin: 'https://evil.example' } })
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })
})
