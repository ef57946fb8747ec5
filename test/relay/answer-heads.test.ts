import { describe, expect, test } from 'bun:test'
import { createRelay } from '@sightline/relay'
import { isDroppedResponseHeader } from '@sightline/relay/headers'
import { ResponseParser } from '@sightline/relay/upstream/parser'
import { socketClient } from '@sightline/relay/upstream/socket'

// Heads the socket client must refuse rather than read past: a bare LF (RFC 9112 §2.2 lets a
// recipient take it alone as a line end) in a reason phrase, an interim answer or a field the relay
// drops unread hides fields, or a whole answer, that the relay did not count.

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'
const HIDDEN = {
  'a reason phrase': 'HTTP/1.1 200 OK\nContent-Length: 2\n\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nOTHER',
  'an interim answer': 'HTTP/1.1 100 Continue\nContent-Length: 5\n\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
  'a field the relay drops (Set-Cookie)': 'HTTP/1.1 200 OK\r\nSet-Cookie: a=1\nContent-Length: 5\r\nContent-Length: 2\r\n\r\nok',
  'a field named by Connection': 'HTTP/1.1 200 OK\r\nConnection: x-hop\r\nX-Hop: 1\nContent-Length: 5\r\nContent-Length: 2\r\n\r\nok',
}

describe('the response parser', () => {
  test('a head with a bare LF or CR, or another control than HTAB, throws', () => {
    for (const raw of [...Object.values(HIDDEN), 'HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n', 'HTTP/1.1 200 O\x00K\r\nContent-Length: 0\r\n\r\n', 'HTTP/1.1 200 OK\r\nKeep-Alive: a\x01\r\nContent-Length: 0\r\n\r\n']) {
      expect(() => new ResponseParser(isDroppedResponseHeader).push(Buffer.from(raw, 'latin1'), false)).toThrow('control character in the head')
    }
  })

  test('so do a chunk extension and a trailer with a bare LF', () => {
    for (const raw of ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x\n0\n\r\nok\r\n0\r\n\r\n', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\n\nHTTP/1.1 200 OK\r\n\r\n']) {
      expect(() => new ResponseParser().push(Buffer.from(raw, 'latin1'), false)).toThrow('control character in the chunked framing')
    }
  })

  test('HTAB and obs-text are kept', () => {
    const head = new ResponseParser().push(Buffer.from('HTTP/1.1 200 O\tK\xe9\r\nX-A: a\tb\xe9\r\nContent-Length: 0\r\n\r\n', 'latin1'), false).head
    expect({ statusText: head?.statusText, headers: head?.headers }).toEqual({ statusText: 'O\tK\xe9', headers: [['x-a', 'a\tb\xe9'], ['content-length', '0']] })
  })
})

describe('socket client: a bare LF in the head', () => {
  for (const [where, answer] of Object.entries(HIDDEN)) {
    test(`(in ${where}) is 502, its connection closed; the next request gets a fresh one`, async () => {
      let count = 0
      let opened = 0
      const connections: number[] = []
      const listener = Bun.listen<{ index: number }>({
        hostname: '127.0.0.1',
        port: 0,
        socket: {
          open(socket) {
            socket.data = { index: opened++ }
          },
          data(socket) {
            connections.push(socket.data.index)
            socket.write(count++ === 0 ? answer : OK)
          },
        },
      })
      try {
        const relay = createRelay({ upstream: `http://127.0.0.1:${listener.port}`, prefix: '/_sl', client: socketClient(), timeoutMs: 2000 })
        const refused = await relay(new Request('http://shop.test/_sl/health'))
        expect({ status: refused.status, code: ((await refused.json()) as { error: { code: string } }).error.code }).toEqual({ status: 502, code: 'upstream_unreachable' })
        expect(await (await relay(new Request('http://shop.test/_sl/health'))).text()).toBe('ok')
        expect(connections).toEqual([0, 1])
      } finally {
        listener.stop(true)
      }
    })
  }
})
