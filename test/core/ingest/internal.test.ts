import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { assertSecret } from '@sightline/core/ingest/internal/service'
import { startCore, type TestCore } from '../../helpers/core'

const SECRET = 'internal-secret-for-tests-0123456789'
const PATH = '/api/internal/scan-findings'

let core: TestCore
let disabled: TestCore
beforeAll(async () => {
  core = await startCore({ env: { INTERNAL_SECRET: SECRET } })
  disabled = await startCore({ database: core.database })
})
afterAll(async () => {
  await disabled.close()
  await core.close()
})

const send = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${SECRET}` }, target = core) =>
  target.request(PATH, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })
const finding = (extra: object = {}) => ({ ruleId: 'js/xss', severity: 'high', file: 'src/render.ts', line: 12, message: 'unescaped HTML', ...extra })
const findings = () =>
  core.database.db.rows<{ fingerprint: string; source: string | null; rule_id: string; severity: string; line: number | null; message: string; moved: boolean }>(
    sql`select fingerprint, source, rule_id, severity, line, message, last_seen_at > first_seen_at as moved from scan_findings where project_id = ${core.project.projectId} order by rule_id, fingerprint`,
  )
const expectError = async (res: Response, status: number, code: string) => {
  expect(res.status).toBe(status)
  const body = await res.json()
  expect(body).toMatchObject({ success: false, error: { code } })
  expect(typeof body.error.message).toBe('string')
  return body
}

describe('POST /api/internal/scan-findings', () => {
  test('without INTERNAL_SECRET the route does not exist, whatever the method', async () => {
    await expectError(await send({ projectId: core.project.projectId, findings: [] }, { authorization: `Bearer ${SECRET}` }, disabled), 404, 'not_found')
    await expectError(await disabled.request(PATH), 404, 'not_found')
  })

  test('the secret as a Bearer token or X-Internal-Secret; findings stored, upserted by fingerprint', async () => {
    const first = await send({ projectId: core.project.projectId, source: 'semgrep', findings: [finding({ fingerprint: 'fp-1' }), finding({ ruleId: 'js/sqli', line: null })] })
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual({ success: true, accepted: 2 })

    await Bun.sleep(5)
    const again = await send(
      { projectId: core.project.projectId.toUpperCase(), source: 'semgrep', findings: [finding({ fingerprint: 'fp-1', severity: 'critical', line: 14, message: 'still unescaped' }), finding({ ruleId: 'js/sqli', line: null })] },
      { 'x-internal-secret': SECRET },
    )
    expect(again.status).toBe(200)
    const stored = await findings()
    expect(stored).toHaveLength(2)
    expect(stored.find((f) => f.fingerprint === 'fp-1')).toEqual({ fingerprint: 'fp-1', source: 'semgrep', rule_id: 'js/xss', severity: 'critical', line: 14, message: 'still unescaped', moved: true })
    expect(stored.find((f) => f.rule_id === 'js/sqli')).toMatchObject({ severity: 'high', line: null, moved: true })
  })

  test('the same fingerprint twice in one request is one finding, the last one', async () => {
    await send({ projectId: core.project.projectId, findings: [finding({ fingerprint: 'fp-2', message: 'a' }), finding({ fingerprint: 'fp-2', message: 'b' })] })
    expect((await findings()).filter((f) => f.fingerprint === 'fp-2').map((f) => f.message)).toEqual(['b'])
  })

  test('fingerprints stored as one (NUL dropped, a lone surrogate as U+FFFD) are one finding in the request too, the last one', async () => {
    const res = await send({
      projectId: core.project.projectId,
      findings: [
        finding({ fingerprint: 'fp-cut\ud83d', message: 'first' }),
        finding({ fingerprint: 'fp-cut\ud83e', message: 'second' }),
        finding({ fingerprint: 'fp-nul\u0000\udc00', message: 'third' }),
        finding({ fingerprint: 'fp-nul\ufffd', message: 'fourth' }),
      ],
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, accepted: 4 })
    expect((await findings()).filter((f) => f.fingerprint.startsWith('fp-cut') || f.fingerprint.startsWith('fp-nul')).map((f) => [f.fingerprint, f.message])).toEqual([
      ['fp-cut\ufffd', 'second'],
      ['fp-nul\ufffd', 'fourth'],
    ])
  })

  test('a secret with spaces (a passphrase) is taken whole, in either header', async () => {
    const passphrase = 'correct horse battery staple'
    const spaced = await startCore({ database: core.database, env: { INTERNAL_SECRET: passphrase } })
    try {
      const body = { projectId: core.project.projectId, findings: [] }
      expect((await send(body, { authorization: `Bearer ${passphrase}` }, spaced)).status).toBe(200)
      expect((await send(body, { 'x-internal-secret': passphrase }, spaced)).status).toBe(200)
      await expectError(await send(body, { authorization: 'Bearer correct horse' }, spaced), 401, 'invalid_secret')
    } finally {
      await spaced.close()
    }
  })

  test('a missing or wrong secret: 401 before the body is looked at; no CORS for browsers', async () => {
    await expectError(await send({ nonsense: true }, {}), 401, 'invalid_secret')
    await expectError(await send({ projectId: core.project.projectId, findings: [finding()] }, { authorization: 'Bearer wrong-secret' }), 401, 'invalid_secret')
    await expectError(await send({ projectId: core.project.projectId, findings: [finding()] }, { 'x-internal-secret': SECRET.slice(0, -1) }), 401, 'invalid_secret')
    await expectError(await send({ projectId: core.project.projectId, findings: [finding()] }, { authorization: `Bearer ${core.key}` }), 401, 'invalid_secret')
    // What the body would have been refused for is not told to a caller without the secret.
    await expectError(await send('{"projectId":', {}), 401, 'invalid_secret')
    await expectError(await send('x'.repeat(2 * 1024 * 1024), { authorization: 'Bearer wrong-secret' }), 401, 'invalid_secret')
    await expectError(await send('{}', { 'content-encoding': 'br' }), 401, 'invalid_secret')
    await expectError(await send('--x\r\nnot a part', { 'content-type': 'multipart/form-data; boundary=x' }), 401, 'invalid_secret')
    const preflight = await core.request(PATH, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('the comparison: equal secrets pass, any difference fails, lengths included', () => {
    expect(() => assertSecret(SECRET, SECRET)).not.toThrow()
    for (const wrong of [undefined, '', 'x', SECRET + 'x', SECRET.toUpperCase()]) expect(() => assertSecret(wrong, SECRET)).toThrow()
  })

  test.each([
    [{ findings: [] }, '/projectId'],
    [{ projectId: 'not-a-uuid', findings: [] }, '/projectId'],
    [{ projectId: '00000000-0000-4000-8000-000000000000', findings: [] }, '/projectId'],
    [{ projectId: 'PROJECT', findings: [{ ...finding(), severity: 'urgent' }] }, '/findings/0/severity'],
    [{ projectId: 'PROJECT', findings: [{ ...finding(), ruleId: '' }] }, '/findings/0/ruleId'],
    [{ projectId: 'PROJECT', findings: [{ ...finding(), line: 1.5 }] }, '/findings/0/line'],
    [{ projectId: 'PROJECT', findings: [{ ...finding(), message: undefined }] }, '/findings/0/message'],
    [{ projectId: 'PROJECT' }, '/findings'],
  ])('validation: %j fails at %s', async (body, path) => {
    const res = await send(JSON.parse(JSON.stringify(body).replace('"PROJECT"', JSON.stringify(core.project.projectId))))
    const answer = await expectError(res, 400, 'validation_failed')
    expect(answer.path).toBe(path)
  })

  test('with the secret: not JSON, 400; too large, 413; an unknown encoding, 415; gzip is read; wrong method, 405', async () => {
    await expectError(await send('{"projectId":'), 400, 'invalid_json')
    await expectError(await send('--x\r\nnot a part', { authorization: `Bearer ${SECRET}`, 'content-type': 'multipart/form-data; boundary=x' }), 400, 'invalid_json')
    await expectError(await send('x'.repeat(2 * 1024 * 1024)), 413, 'payload_too_large')
    await expectError(await send('{}', { authorization: `Bearer ${SECRET}`, 'content-encoding': 'br' }), 415, 'unsupported_encoding')
    const gzipped = Bun.gzipSync(JSON.stringify({ projectId: core.project.projectId, findings: [finding({ fingerprint: 'fp-gzip' })] }))
    const res = await core.request(PATH, { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, 'content-encoding': 'gzip' }, body: gzipped })
    expect(await res.json()).toEqual({ success: true, accepted: 1 })
    expect((await findings()).some((f) => f.fingerprint === 'fp-gzip')).toBe(true)
    await expectError(await core.request(PATH, { headers: { authorization: `Bearer ${SECRET}` } }), 405, 'method_not_allowed')
  })
})
