import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { startCore, type TestCore } from '../../helpers/core'

// The plumbing over a real socket, where Bun's server (not only app.handle) is in the path.
let core: TestCore
let base: string
beforeAll(async () => {
  core = await startCore()
  base = await core.listen()
})
afterAll(() => core.close())

/** Sends raw bytes and returns what came back before the server closed or 2 s passed. */
function rawExchange(request: string): Promise<string> {
  const { port } = new URL(base)
  return new Promise((resolve) => {
    let answer = ''
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request))
    const done = () => resolve(answer)
    socket.on('data', (chunk) => (answer += chunk))
    socket.on('close', done)
    setTimeout(() => socket.destroy(), 2000)
  })
}

describe('over a real socket', () => {
  test.each([2_000_000, 500_000_000])('Content-Length %d is refused with 413 in the error shape before any body is sent', async (size) => {
    const started = performance.now()
    const answer = await rawExchange(
      `POST /api/ingestion/customEvent HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n{"sessionId":`,
    )
    expect(answer).toStartWith('HTTP/1.1 413')
    expect(answer).toContain('"code":"payload_too_large"')
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('gzip, text/plain and the key in the body arrive like a beacon sends them', async () => {
    const res = await fetch(`${base}/api/ingestion/customEvent?compression=gzip`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: gzipSync(JSON.stringify({ sessionId: 'socket', endUserId: 'socket-u', eventName: 'beacon', apiKey: core.key })),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true })
  })

  test('CORS preflight and a cross-origin answer', async () => {
    const preflight = await fetch(`${base}/api/ingestion/customEvent`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example')
    const res = await fetch(`${base}/api/ingestion/customEvent`, {
      method: 'POST',
      headers: { origin: 'https://shop.example', authorization: `Bearer ${core.key}` },
      body: JSON.stringify({ sessionId: 'socket', eventName: 'cors' }),
    })
    expect(res.headers.get('access-control-allow-origin')).toBe('https://shop.example')
  })

  test('unknown path and wrong method', async () => {
    expect((await fetch(`${base}/nowhere`)).status).toBe(404)
    const res = await fetch(`${base}/api/ingestion/customEvent`)
    expect(res.status).toBe(405)
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } })
  })
})
