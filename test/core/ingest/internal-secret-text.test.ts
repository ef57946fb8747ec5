import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startCore, type TestCore } from '../../helpers/core'
import { rawRequest } from '../../helpers/raw-http'

// A passphrase with letters beyond ASCII: INTERNAL_SECRET takes it (16 characters or more). Its last
// letter's UTF-8 ends in byte A0, which read as a character is a no-break space, not to be trimmed.
const SECRET = 'geheimer Schlüssel für die Prüfung, voilà'
const PATH = '/api/internal/scan-findings'

let core: TestCore
let base: string
beforeAll(async () => {
  core = await startCore({ env: { INTERNAL_SECRET: SECRET } })
  base = await core.listen()
})
afterAll(() => core.close())

/** The request as curl or a shell script sends it: the header's text as UTF-8 bytes. */
const sendRaw = (headerLine: string) => {
  const body = JSON.stringify({ projectId: core.project.projectId, findings: [] })
  return rawRequest(base, `POST ${PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headerLine}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
}

test('a secret beyond ASCII, sent as UTF-8 (curl, a shell script), in either header, is the secret', async () => {
  for (const header of [`X-Internal-Secret: ${SECRET}`, `Authorization: Bearer ${SECRET}`]) {
    const res = await sendRaw(header)
    expect(res.status).toBe(200)
    expect(JSON.parse(res.text)).toEqual({ success: true, accepted: 0 })
  }
})

test('as one byte per character (what fetch sends of it) too; any other secret is still refused', async () => {
  const viaFetch = await fetch(`${base}${PATH}`, {
    method: 'POST',
    headers: { 'x-internal-secret': SECRET, 'content-type': 'application/json' },
    body: JSON.stringify({ projectId: core.project.projectId, findings: [] }),
  })
  expect(viaFetch.status).toBe(200)
  for (const wrong of [SECRET.replace('ü', 'u'), SECRET.replace('ü', 'ue'), `${SECRET}x`]) {
    const res = await sendRaw(`X-Internal-Secret: ${wrong}`)
    expect(res.status).toBe(401)
    expect(JSON.parse(res.text).error.code).toBe('invalid_secret')
  }
})
