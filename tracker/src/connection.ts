import { API } from './config'
import type { Messages } from './messages'
import { GZIP_TIMEOUT_MS, PROBE_TIMEOUT_MS, timed, type Transport } from './transport'
import type { Clock, ConnectionTest, FetchFunction, PageWindow } from './types'
import { SDK_VERSION } from './version'

/**
 * What the connection needs beyond sending as it is, in a module of its own that the transport loads
 * when first needed (an app's bundler keeps it out of the first load): gzip, the reachability probe,
 * and `testConnection()`. Nothing of it runs on unload: beacons go uncompressed, and the probe follows
 * a failed fetch. Where it cannot be loaded (a chunk gone after a deploy, the network down), bodies go
 * uncompressed and the service is taken for unreachable, as a failed probe says anyway.
 */

/**
 * The status of a no-cors GET of the health probe (0, opaque, from another origin); it throws when
 * the network fails or it is not answered within PROBE_TIMEOUT_MS.
 */
export const probe = (fetch: FetchFunction, base: string, clock: Clock): Promise<number> =>
  timed(clock, PROBE_TIMEOUT_MS, async (signal) => (await fetch(base + '/health/simple', { mode: 'no-cors', signal })).status)

/**
 * `text` gzipped by the page's `CompressionStream`; nothing where there is none, or where its stream
 * has not finished within GZIP_TIMEOUT_MS (one some browsers and extensions leave stalled: the late
 * result, if any, is ignored). Timed by the page's own timer, not the tracker's clock: it bounds the
 * browser's work, which takes the time it takes. A polyfill that throws, or whose stream errors, throws.
 */
export async function gzip(win: PageWindow, text: string): Promise<ArrayBuffer | void> {
  const Compression = (win as { CompressionStream?: typeof CompressionStream }).CompressionStream
  if (!Compression) return
  let timer: number | undefined
  try {
    return await Promise.race([
      new Response(new Blob([text]).stream().pipeThrough(new Compression('gzip'))).arrayBuffer(),
      new Promise<void>((done) => (timer = win.setTimeout(done, GZIP_TIMEOUT_MS))),
    ])
  } finally {
    win.clearTimeout(timer)
  }
}

/** `testConnection()`: one call of the (deprecated) init endpoint, its only caller, and what happened. */
export async function testConnection(transport: Transport, messages: Messages, clock: Clock, ingestionUrl: string): Promise<ConnectionTest> {
  const start = clock.now()
  const answer = await transport.post(API + '/init', { ...messages.owner(false), entryURL: messages.here(), referrer: messages.referrer, sdkVersion: SDK_VERSION })
  const blocked = transport.blocked || (answer.status === 0 && transport.online() && (await transport.reachable()))
  return { ok: answer.status === 200, status: answer.status, latencyMs: clock.now() - start, ingestionUrl, blocked }
}
