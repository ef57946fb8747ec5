import { describe, expect, test } from 'bun:test'
import { dlopen, FFIType, ptr } from 'bun:ffi'
import { createRelay } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'

// A core that stops answering connects (its host down, a firewall that drops rather than refuses):
// a connect then waits for the system to give up on it, about two minutes, and Bun's cannot be
// stopped sooner. The request that started it is given up at timeoutMs; its connection to core must
// not hold the relay's place for those two minutes, or every request meanwhile waits in the queue
// and is refused `overloaded`, and once core is back the relay still waits for those connects'
// next retries before anything reaches it. (The fetch client aborts its fetch, connect and all.)

/**
 * A port where connects hang, as they do towards a host that drops them: a listening socket that
 * never accepts, its backlog of one taken by a first connection, so that Linux drops every further
 * SYN. Made through libc, since Bun's listeners accept everything at once.
 */
function startBlackHole() {
  const libc = dlopen('libc.so.6', {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  })
  const { socket, bind, listen, getsockname, close } = libc.symbols
  const AF_INET = 2
  const SOCK_STREAM = 1
  const fd = socket(AF_INET, SOCK_STREAM, 0)
  // struct sockaddr_in: family, port 0 (any), 127.0.0.1.
  const address = new Uint8Array(16)
  address.set([AF_INET, 0, 0, 0, 127, 0, 0, 1])
  if (fd < 0 || bind(fd, ptr(address), 16) !== 0 || listen(fd, 0) !== 0) throw new Error('could not make a listening socket')
  getsockname(fd, ptr(address), ptr(new Uint32Array([16])))
  const port = (address[2] << 8) | address[3]
  const filler = Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    ready: filler,
    /** Stops listening: the connects still trying are refused at their next retry. */
    async close() {
      close(fd)
      ;(await filler).terminate()
      libc.close()
    },
  }
}

const relayTo = (upstream: string, { maxConnections = 1, timeoutMs = 300, client = 'socket' } = {}) =>
  createRelay({ upstream, prefix: '/_sl', timeoutMs, ...(client === 'socket' ? { client: socketClient({ maxConnections, maxQueued: 10 }) } : { maxConnections, maxQueued: 10 }) })

const post = () => new Request('http://shop.test/_sl/api/ingestion/customEvent', { method: 'POST', body: '{"sessionId":"s","eventName":"e"}' })

const codeOf = async (response: Response) => `${response.status} ${((await response.json()) as { error: { code: string } }).error.code}`

describe.skipIf(process.platform !== 'linux')('a connect core never answers', () => {
  for (const client of ['socket', 'fetch']) {
    test(`${client} client: gives up its place with its request: the next request gets a connect of its own (504 at timeoutMs), not the queue (503 overloaded)`, async () => {
      const core = startBlackHole()
      await core.ready
      try {
        const relay = relayTo(core.url, { client })
        const started = performance.now()
        expect(await codeOf(await relay(post()))).toBe('504 upstream_timeout')
        expect(performance.now() - started).toBeGreaterThan(250)
        // With the place still held by the first connect, this one waited in the queue for it.
        expect(await codeOf(await relay(post()))).toBe('504 upstream_timeout')
      } finally {
        await core.close()
      }
    })
  }

  test('socket client: once core answers again, the next request reaches it at once, without waiting for the connects given up', async () => {
    const hole = startBlackHole()
    await hole.ready
    const relay = relayTo(hole.url, { maxConnections: 2 })
    expect((await Promise.all([relay(post()), relay(post())])).map((r) => r.status)).toEqual([504, 504])
    // Core is back on the same port; the two connects given up are still waiting for their retry.
    await hole.close()
    let reached = 0
    const core = Bun.serve({ hostname: '127.0.0.1', port: hole.port, fetch: () => (reached++, Response.json({ success: true })) })
    try {
      const started = performance.now()
      const answer = await relay(post())
      expect(answer.status).toBe(200)
      expect(performance.now() - started).toBeLessThan(250)
      expect(reached).toBe(1)
    } finally {
      core.stop(true)
    }
  })

  test('socket client: connects let go are bounded by maxConnections: past that a connect keeps its place and requests queue for it (503 overloaded)', async () => {
    const core = startBlackHole()
    await core.ready
    try {
      const relay = relayTo(core.url)
      // The first connect is let go, the second keeps the one place: the third waits for it in vain.
      expect(await codeOf(await relay(post()))).toBe('504 upstream_timeout')
      expect(await codeOf(await relay(post()))).toBe('504 upstream_timeout')
      expect(await codeOf(await relay(post()))).toBe('503 overloaded')
    } finally {
      await core.close()
    }
  })
})
