import { chownSync, readdirSync } from 'node:fs'
import { freePort, isRoot, removeDir, run, tempDir } from '../bench/lib/system'

/** The newest Postgres server binaries installed in Debian's layout, or undefined when there are none. */
export function postgresBinaries(): string | undefined {
  let versions: string[]
  try {
    versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
  } catch {
    return undefined
  }
  return versions.length ? `/usr/lib/postgresql/${versions[0]}/bin` : undefined
}

/** A Postgres server of its own: a data folder, a port, and the server's lifecycle around them. */
export interface PostgresServer {
  /** Connection string of its `postgres` database, as the `postgres` superuser (trust). */
  url: string
  port: number
  /** The server's own log: what it did while stopping and starting. */
  logFile: string
  /** Stops the server (`fast`: rolls back open transactions and ends every session), waiting until it is down. */
  stop(mode?: 'smart' | 'fast' | 'immediate'): Promise<void>
  /** Starts it again on the same folder and port, waiting until it takes connections. */
  start(): Promise<void>
  /** Stops it if it runs and removes its folder. */
  close(): Promise<void>
}

/**
 * A throwaway Postgres server, as CI starts one: initdb in a temporary folder, a free port, default
 * (durable) settings but `settings`, stopped and started as an operator would with pg_ctl. initdb
 * refuses to run as root, so as root the server runs as the `postgres` user. Needs the binaries
 * (`postgresBinaries()`); the benchmarks install them when missing, tests skip without them.
 */
export async function startPostgresServer(settings: Record<string, string> = {}): Promise<PostgresServer> {
  const bin = postgresBinaries()
  if (!bin) throw new Error('no Postgres server binaries under /usr/lib/postgresql (Debian package postgresql)')
  const root = tempDir('sightline-pg-')
  const port = await freePort()
  const logFile = `${root}/server.log`
  const asPostgres = (cmd: string[]) => (isRoot() ? ['runuser', '-u', 'postgres', '--', ...cmd] : cmd)
  if (isRoot()) {
    await run(['sh', '-c', 'id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres'])
    chownSync(root, Number((await run(['id', '-u', 'postgres'])).trim()), Number((await run(['id', '-g', 'postgres'])).trim()))
  }
  await run(asPostgres([`${bin}/initdb`, '-D', `${root}/data`, '-U', 'postgres', '-A', 'trust', '--no-sync']))
  const options = Object.entries({ listen_addresses: '127.0.0.1', max_connections: '200', ...settings })
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ')
  let running = false
  const server: PostgresServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    logFile,
    async start() {
      await run(asPostgres([`${bin}/pg_ctl`, '-D', `${root}/data`, '-l', logFile, '-w', 'start', '-o', `-p ${port} -k ${root} ${options}`]))
      running = true
    },
    async stop(mode = 'fast') {
      await run(asPostgres([`${bin}/pg_ctl`, '-D', `${root}/data`, '-m', mode, '-w', 'stop']))
      running = false
    },
    async close() {
      if (running) await server.stop().catch(() => {})
      removeDir(root)
    },
  }
  try {
    await server.start()
  } catch (error) {
    removeDir(root)
    throw error
  }
  return server
}
