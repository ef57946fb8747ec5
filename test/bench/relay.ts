import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { parseArgs, startCoreProcess, type CoreProcess } from './core'
import { startPostgres, type PostgresServer } from './lib/postgres'
import { fmt, median, table, type Row } from './lib/report'
import { ensureDebianPackage, freePort, removeDir, tempDir, waitForHttp } from './lib/system'
import { runWrk, type LoadOptions, type LoadResult } from './lib/wrk'

/**
 * `npm run bench -- relay [--runs N] [--seconds S]`: the relay on Bun against nginx, in one run, in
 * front of the same core: direct, through nginx (`proxy_pass`, one worker, upstream keep-alive,
 * the same header rules as the relay), through the relay (standalone mode). Each run measures the
 * three back to back in a rotating order, so background load falls on all of them alike.
 */
const ROOT = join(import.meta.dir, '..', '..')
const PREFIX = '/_sl'

/** nginx doing what the relay does: prefix stripped, cookies dropped both ways, forwarding headers set. */
function nginxConfig(dir: string, port: number, core: string): string {
  return `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream core { server ${core}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location ${PREFIX}/ {
      proxy_pass http://core/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Cookie "";
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
      proxy_hide_header Set-Cookie;
    }
  }
}
`
}

interface Proxy {
  url: string
  proc: Subprocess
  stop(): Promise<void>
}

async function startNginx(coreUrl: string): Promise<Proxy & { dir: string }> {
  const nginx = await ensureDebianPackage('nginx', 'nginx')
  const dir = tempDir('sightline-bench-nginx-')
  const port = await freePort()
  const conf = join(dir, 'nginx.conf')
  writeFileSync(conf, nginxConfig(dir, port, new URL(coreUrl).host))
  const proc = Bun.spawn([nginx, '-c', conf, '-p', dir], { stdout: 'ignore', stderr: 'inherit' })
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}${PREFIX}/health/simple`)
  return {
    url,
    dir,
    proc,
    async stop() {
      proc.kill('SIGQUIT')
      await proc.exited
      removeDir(dir)
    },
  }
}

/** The relay as an operator runs it: `npm run relay -- --upstream ... --prefix /_sl --port N`. */
async function startRelayProcess(coreUrl: string): Promise<Proxy> {
  const port = await freePort()
  const proc = Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), '--upstream', coreUrl, '--prefix', PREFIX, '--port', String(port), '--host', '127.0.0.1'], {
    cwd: ROOT,
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}${PREFIX}/health/simple`)
  return {
    url,
    proc,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

type Route = 'direct' | 'nginx' | 'relay'

interface Scenario {
  name: string
  path: string
  load: Omit<LoadOptions, 'url'>
}

async function measure(options: LoadOptions): Promise<LoadResult> {
  const result = await runWrk(options)
  if (result.failures > 0) throw new Error(`${options.url}: ${result.failures} failed requests; not a valid measurement`)
  return result
}

export async function main(args: string[]): Promise<void> {
  const { runs, seconds } = parseArgs(args)
  const log = (message: string) => console.error(`[bench] ${message}`)
  let pg: PostgresServer | undefined
  let core: CoreProcess | undefined
  let nginx: Proxy | undefined
  let relay: Proxy | undefined
  try {
    log('starting Postgres, core, nginx and the relay')
    pg = await startPostgres()
    core = await startCoreProcess({ DATABASE_URL: pg.url })
    nginx = await startNginx(core.url)
    relay = await startRelayProcess(core.url)
    const bases: Record<Route, string> = { direct: core.url, nginx: `${nginx.url}${PREFIX}`, relay: `${relay.url}${PREFIX}` }

    const events = Array.from({ length: 64 }, (_, i) => JSON.stringify({ sessionId: `relay-bench-${i % 8}`, eventName: 'page_view', eventProperties: { path: `/products/${i}`, n: i } }))
    const scenarios: Scenario[] = [
      // No database work: what the hop itself costs.
      { name: 'GET /health/simple', path: '/health/simple', load: { method: 'GET', connections: 32 } },
      // A durable write with the key in the header (the relay moves it into the body).
      {
        name: 'POST /api/ingestion/customEvent',
        path: '/api/ingestion/customEvent',
        load: { method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' }, bodies: events, connections: 32 },
      },
    ]

    const rows: Row[] = []
    for (const scenario of scenarios) {
      log(`${scenario.name}: warming up`)
      for (const route of ['direct', 'nginx', 'relay'] as Route[]) await measure({ ...scenario.load, url: bases[route] + scenario.path, durationSeconds: Math.min(2, seconds) })
      const results: Record<Route, LoadResult[]> = { direct: [], nginx: [], relay: [] }
      for (let run = 0; run < runs; run++) {
        const order: Route[] = (['direct', 'nginx', 'relay'] as Route[]).map((_, i, all) => all[(i + run) % all.length])
        for (const route of order) {
          const result = await measure({ ...scenario.load, url: bases[route] + scenario.path, durationSeconds: seconds })
          log(`${scenario.name} run ${run + 1} ${route}: ${fmt(result.requestsPerSecond)} req/s, p50 ${fmt(result.p50Ms, 2)} ms, p99 ${fmt(result.p99Ms, 2)} ms`)
          results[route].push(result)
        }
      }
      const summary = (route: Route) => ({
        rps: median(results[route].map((r) => r.requestsPerSecond)),
        p50: median(results[route].map((r) => r.p50Ms)),
        p99: median(results[route].map((r) => r.p99Ms)),
      })
      const direct = summary('direct')
      const viaNginx = summary('nginx')
      const viaRelay = summary('relay')
      const ratios = results.relay.map((r, i) => r.requestsPerSecond / results.nginx[i].requestsPerSecond)
      const ratio = median(ratios)
      const addedP99 = median(results.relay.map((r, i) => r.p99Ms - results.direct[i].p99Ms))
      const describe = (s: typeof direct) => `${fmt(s.rps)} req/s, p50 ${fmt(s.p50, 2)} ms, p99 ${fmt(s.p99, 2)} ms`
      rows.push(
        { name: `${scenario.name}: direct`, value: describe(direct) },
        { name: `${scenario.name}: nginx`, value: describe(viaNginx) },
        { name: `${scenario.name}: relay (Bun)`, value: describe(viaRelay) },
        { name: `${scenario.name}: relay / nginx req/s`, value: `${fmt(ratio, 2)}× (runs: ${ratios.map((r) => fmt(r, 2)).join(', ')})`, target: '≥ 0.90×', met: ratio >= 0.9 },
        { name: `${scenario.name}: p99 added by the relay`, value: `${addedP99 >= 0 ? '+' : ''}${fmt(addedP99, 2)} ms`, target: '≤ 1 ms', met: addedP99 <= 1 },
      )
    }
    console.log(table(`Relay vs nginx in front of core (medians of ${runs} runs of ${seconds} s, wrk 1 thread, 32 connections)`, rows))
  } finally {
    await relay?.stop()
    await nginx?.stop()
    await core?.stop()
    await pg?.stop()
  }
}
