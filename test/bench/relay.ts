import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { parseArgs, startCoreProcess, type CoreProcess } from './core'
import { startPostgres, type PostgresServer } from './lib/postgres'
import { fmt, median, table, type Row } from './lib/report'
import { ensureDebianPackage, freePort, removeDir, run, tempDir, waitForHttp } from './lib/system'
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
async function startRelayProcess(coreUrl: string, server: 'own' | 'bun', client: 'socket' | 'fetch'): Promise<Proxy> {
  const port = await freePort()
  const args = ['--upstream', coreUrl, '--prefix', PREFIX, '--port', String(port), '--host', '127.0.0.1', '--server', server, '--client', client]
  const proc = Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), ...args], {
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

/**
 * `relay` is the standalone relay as it runs by default (its own HTTP/1.1 server); `relay-bun` the
 * same relay as Bun.serve's handler (how the Bun adapter mounts it), and `relay-fetch` that one
 * forwarding with the runtime's fetch: what the own server and the socket client are measured against.
 */
type Route = 'direct' | 'nginx' | 'relay' | 'relay-bun' | 'relay-fetch'
const ROUTES: Route[] = ['direct', 'nginx', 'relay', 'relay-bun', 'relay-fetch']
const PROXIES = ROUTES.filter((route) => route !== 'direct')
const LABEL: Record<Route, string> = {
  direct: 'direct',
  nginx: 'nginx',
  relay: 'relay (own server, socket client)',
  'relay-bun': 'relay (Bun.serve, socket client)',
  'relay-fetch': 'relay (Bun.serve, fetch client)',
}
const perRoute = <T>(make: () => T) => Object.fromEntries(ROUTES.map((route) => [route, make()])) as Record<Route, T>

interface Scenario {
  name: string
  path: string
  load: Omit<LoadOptions, 'url'>
}

/** CPU time (user + system) a process and its children have used so far, in microseconds, from /proc. */
async function cpuMicros(pid: number): Promise<number> {
  const children = (await Bun.file(`/proc/${pid}/task/${pid}/children`).text().catch(() => '')).split(' ').filter(Boolean).map(Number)
  const ticks = async (p: number) => {
    const fields = (await Bun.file(`/proc/${p}/stat`).text()).split(') ')[1].split(' ')
    return Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15 of stat)
  }
  let total = 0
  for (const p of [pid, ...children]) total += await ticks(p)
  return (total * 1e6) / CLOCK_TICKS
}
const CLOCK_TICKS = Number((await run(['getconf', 'CLK_TCK']).catch(() => '100')).trim()) || 100

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
  const proxies: Partial<Record<Route, Proxy>> = {}
  try {
    log('starting Postgres, core, nginx and the relays')
    pg = await startPostgres()
    core = await startCoreProcess({ DATABASE_URL: pg.url })
    proxies.nginx = await startNginx(core.url)
    proxies.relay = await startRelayProcess(core.url, 'own', 'socket')
    proxies['relay-bun'] = await startRelayProcess(core.url, 'bun', 'socket')
    proxies['relay-fetch'] = await startRelayProcess(core.url, 'bun', 'fetch')
    const pids = Object.fromEntries(ROUTES.map((route) => [route, proxies[route]?.proc.pid ?? null])) as Record<Route, number | null>
    const bases = Object.fromEntries(ROUTES.map((route) => [route, route === 'direct' ? core!.url : `${proxies[route]!.url}${PREFIX}`])) as Record<Route, string>

    const events = Array.from({ length: 64 }, (_, i) => JSON.stringify({ sessionId: `relay-bench-${i % 8}`, eventName: 'page_view', eventProperties: { path: `/products/${i}`, n: i } }))
    const scenarios: Scenario[] = [
      // No database work: what the hop itself costs.
      { name: 'GET /health/simple', path: '/health/simple', load: { method: 'GET' } },
      // A durable write with the key in the header (the relay moves it into the body).
      {
        name: 'POST /api/ingestion/customEvent',
        path: '/api/ingestion/customEvent',
        load: { method: 'POST', headers: { authorization: `Bearer ${core.key}`, 'content-type': 'application/json' }, bodies: events },
      },
    ]

    const rows: Row[] = []
    for (const scenario of scenarios) {
      log(`${scenario.name}: warming up`)
      for (const route of ROUTES) await measure({ ...scenario.load, url: bases[route] + scenario.path, durationSeconds: Math.min(2, seconds) })
      // Throughput with the machine saturated (32 connections), and latency under light load
      // (4 connections), where p99 shows what the hop adds rather than how long the queue is.
      const loaded = perRoute<LoadResult[]>(() => [])
      // CPU the hop itself used per request (the proxy process, during the loaded runs).
      const cpuPerRequest = perRoute<number[]>(() => [])
      const light = perRoute<LoadResult[]>(() => [])
      for (let run = 0; run < runs; run++) {
        for (const route of ROUTES.map((_, i, all) => all[(i + run) % all.length])) {
          const url = bases[route] + scenario.path
          const pid = pids[route]
          const before = pid ? await cpuMicros(pid) : 0
          const result = await measure({ ...scenario.load, url, connections: 32, durationSeconds: seconds })
          if (pid) cpuPerRequest[route].push(((await cpuMicros(pid)) - before) / (result.requestsPerSecond * seconds))
          loaded[route].push(result)
          light[route].push(await measure({ ...scenario.load, url, connections: 4, durationSeconds: seconds }))
          const [a, b] = [loaded[route].at(-1)!, light[route].at(-1)!]
          log(`${scenario.name} run ${run + 1} ${route}: ${fmt(a.requestsPerSecond)} req/s, p99 ${fmt(a.p99Ms, 2)} ms; light load p50 ${fmt(b.p50Ms, 3)} ms, p99 ${fmt(b.p99Ms, 3)} ms`)
        }
      }
      const med = (results: LoadResult[], pick: (r: LoadResult) => number) => median(results.map(pick))
      const ratios = loaded.relay.map((r, i) => r.requestsPerSecond / loaded.nginx[i].requestsPerSecond)
      const ratio = median(ratios)
      const ratioOf = (route: Route) => median(loaded[route].map((r, i) => r.requestsPerSecond / loaded.nginx[i].requestsPerSecond))
      const addedP99 = median(light.relay.map((r, i) => r.p99Ms - light.direct[i].p99Ms))
      for (const route of ROUTES) {
        rows.push({
          name: `${scenario.name}: ${LABEL[route]}`,
          value: `${fmt(med(loaded[route], (r) => r.requestsPerSecond))} req/s, p50 ${fmt(med(loaded[route], (r) => r.p50Ms), 2)} ms, p99 ${fmt(med(loaded[route], (r) => r.p99Ms), 2)} ms; light load p50 ${fmt(med(light[route], (r) => r.p50Ms), 3)} ms, p99 ${fmt(med(light[route], (r) => r.p99Ms), 3)} ms`,
        })
      }
      rows.push(
        { name: `${scenario.name}: relay / nginx req/s`, value: `${fmt(ratio, 2)}× (runs: ${ratios.map((r) => fmt(r, 2)).join(', ')})`, target: '≥ 0.90×', met: ratio >= 0.9 },
        { name: `${scenario.name}: relay on Bun.serve / nginx req/s`, value: `${fmt(ratioOf('relay-bun'), 2)}× (fetch client ${fmt(ratioOf('relay-fetch'), 2)}×)` },
        {
          name: `${scenario.name}: CPU per request of the hop`,
          value: PROXIES.map((route) => `${LABEL[route]} ${fmt(median(cpuPerRequest[route]), 1)} µs`).join(', '),
        },
        { name: `${scenario.name}: p99 the relay adds over direct, light load`, value: `${addedP99 >= 0 ? '+' : ''}${fmt(addedP99, 3)} ms`, target: '≤ 1 ms', met: addedP99 <= 1 },
      )
    }
    console.log(table(`Relay vs nginx in front of core (medians of ${runs} runs of ${seconds} s each; wrk, 1 thread, 32 connections, light load 4)`, rows))
  } finally {
    for (const proxy of Object.values(proxies)) await proxy.stop()
    await core?.stop()
    await pg?.stop()
  }
}
