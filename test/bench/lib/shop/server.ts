import { gunzipSync } from 'node:zlib'
import { join } from 'node:path'
import { shopPage, shopStylesheet } from './pages'

/**
 * Serves the bench shop on loopback with the tracker mounted the way an operator mounts it (its
 * script under `/_sl`, so it sends to `/_sl/api/ingestion/...` on the page's own origin), and keeps
 * every `/events` body the tracker sends, decoded, in the order they arrived. Every ingestion
 * request is answered as core would answer it when all is well.
 */
export interface ShopServer {
  url: string
  /** The `/events` bodies received so far. */
  replayBodies: ReplayBody[]
  stop(): void
}

export interface ReplayBody {
  sessionId: string
  windowId?: string
  seq?: number
  events: { type: number; timestamp: number; data: unknown }[]
  [field: string]: unknown
}

const PIXEL = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 3 4"><rect width="3" height="4" fill="#e5e7eb"/></svg>'

async function bundleApp(): Promise<string> {
  const result = await Bun.build({ entrypoints: [join(import.meta.dir, 'app.ts')], target: 'browser', format: 'iife', minify: true })
  if (!result.success) throw new AggregateError(result.logs, 'the shop script did not build')
  return result.outputs[0].text()
}

export type Redaction = 'privacy-first' | 'visibility-first'

/** The tracker as a site includes it: by `data-api-key` with its defaults, or initialized with another redaction. */
const trackerTag = (apiKey: string, redaction: Redaction) =>
  redaction === 'privacy-first'
    ? `<script async src="/_sl/t.js" data-api-key="${apiKey}"></script>`
    : `<script async src="/_sl/t.js" onload="ServiceTracker.init('${apiKey}', { redactionStrategy: { mode: '${redaction}' } }).start()"></script>`

export async function startShopServer({ trackerScript, apiKey, redaction }: { trackerScript: string; apiKey: string; redaction: Redaction }): Promise<ShopServer> {
  const [app, tracker] = await Promise.all([bundleApp(), Bun.file(trackerScript).text()])
  const css = shopStylesheet()
  const tag = trackerTag(apiKey, redaction)
  const replayBodies: ReplayBody[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      const path = url.pathname
      if (path.startsWith('/_sl/api/ingestion/')) {
        const bytes = new Uint8Array(await request.arrayBuffer())
        const gzip = request.headers.get('content-encoding') === 'gzip' || url.searchParams.get('compression') === 'gzip'
        const body = JSON.parse(new TextDecoder().decode(gzip ? gunzipSync(bytes) : bytes))
        if (path === '/_sl/api/ingestion/events') replayBodies.push(body)
        const answer = path.endsWith('/events') ? { success: true, accepted: body.events?.length ?? 0, dropped: 0 } : path.endsWith('/heartbeat') ? { success: true, liveViewer: false } : { success: true }
        return Response.json(answer)
      }
      if (path === '/_sl/health/simple') return Response.json({ status: 'ok' })
      if (path === '/_sl/t.js') return new Response(tracker, { headers: { 'content-type': 'text/javascript' } })
      if (path === '/assets/app.js') return new Response(app, { headers: { 'content-type': 'text/javascript' } })
      if (path === '/assets/shop.css') return new Response(css, { headers: { 'content-type': 'text/css' } })
      if (path.startsWith('/img/') || path === '/favicon.svg') return new Response(PIXEL, { headers: { 'content-type': 'image/svg+xml' } })
      const page = shopPage(path, tag)
      return page === null ? new Response('not found', { status: 404 }) : new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, replayBodies, stop: () => server.stop(true) }
}
