import { expect, test } from 'bun:test'
import { createRelay, fetchClient } from '@sightline/relay'
import { socketClient } from '@sightline/relay/upstream/socket'

// Fields a browser keeps for the whole origin that sent them: on a relayed answer that origin is the
// site's. What a CDN or TLS terminator in front of core adds (Cloudflare's NEL and Report-To on every
// answer, a zone's HSTS) must not become the site's policy, nor may any cookie be set on it.

const ORIGIN_WIDE: Record<string, string> = {
  'set-cookie': '__cf_bm=1; Path=/',
  'set-cookie2': 'legacy=1; Version=1',
  nel: '{"success_fraction":0,"report_to":"cf-nel","max_age":604800}',
  'report-to': '{"endpoints":[{"url":"https://a.nel.cloudflare.com/report/v4?s=x"}],"group":"cf-nel","max_age":604800}',
  'reporting-endpoints': 'default="https://collector.example/reports"',
  'strict-transport-security': 'max-age=31536000; includeSubDomains; preload',
  'alt-svc': 'h3=":443"; ma=86400',
  'clear-site-data': '"cookies", "storage"',
}

for (const [name, client] of [
  ['socket', socketClient],
  ['fetch', fetchClient],
] as const) {
  test(`${name} client: origin-wide policies and cookies from core's side are not returned on the site's origin; core's own fields are`, async () => {
    const core = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response('{"status":"ok"}', { headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...ORIGIN_WIDE } }),
    })
    try {
      const relay = createRelay({ upstream: `http://127.0.0.1:${core.port}`, prefix: '/_sl', client: client(), timeoutMs: 2000 })
      const res = await relay(new Request('http://shop.test/_sl/health'))
      expect(await res.text()).toBe('{"status":"ok"}')
      expect(Object.keys(ORIGIN_WIDE).filter((field) => res.headers.has(field))).toEqual([])
      expect({ type: res.headers.get('content-type'), cache: res.headers.get('cache-control') }).toEqual({ type: 'application/json', cache: 'no-store' })
    } finally {
      core.stop(true)
    }
  })
}
