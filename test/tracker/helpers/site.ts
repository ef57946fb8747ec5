import { join } from 'node:path'
import { builtTracker } from './build'

/** What the tracker sent: the path under `/api/ingestion` (`/events`, `/customEvent/batch`) and the body. */
export interface SiteSend {
  path: string
  body: any
}

/**
 * A site for headless Chromium that serves t.js as built at `/t.js` and takes every send of the
 * tracker (any path with `/api/ingestion/` in it, a prefix before it or not), gunzipped when it came
 * so, answering success; `serve` answers every other request of the page.
 */
export async function startTrackedSite(serve: (request: Request, url: URL) => Response | Promise<Response>, onSend: (send: SiteSend) => void) {
  const script = await Bun.file(join(await builtTracker(), 't.js')).arrayBuffer()
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url)
      const at = url.pathname.indexOf('/api/ingestion/')
      if (at >= 0) {
        const bytes = new Uint8Array(await request.arrayBuffer())
        const body = JSON.parse(new TextDecoder().decode(url.searchParams.get('compression') === 'gzip' ? Bun.gunzipSync(bytes) : bytes))
        onSend({ path: url.pathname.slice(at + '/api/ingestion'.length), body })
        return Response.json({ success: true })
      }
      if (url.pathname === '/t.js') return new Response(script, { headers: { 'content-type': 'text/javascript' } })
      return serve(request, url)
    },
  })
  return { port: server.port, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
}
