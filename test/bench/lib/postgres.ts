import { readdirSync } from 'node:fs'
import { chownSync } from 'node:fs'
import { ensureDebianPackage, freePort, isRoot, removeDir, run, tempDir } from './system'

export interface PostgresServer {
  url: string
  port: number
  stop(): Promise<void>
}

function postgresBin(): string | undefined {
  const versions = (() => {
    try {
      return readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
    } catch {
      return []
    }
  })()
  return versions.length ? `/usr/lib/postgresql/${versions[0]}/bin` : undefined
}

/**
 * A throwaway Postgres server, as CI starts one: initdb in a temporary folder, a free port, default
 * (durable) settings, stopped by `stop()`. Runs as the `postgres` user when we are root.
 */
export async function startPostgres(settings: Record<string, string> = {}): Promise<PostgresServer> {
  if (!postgresBin()) await ensureDebianPackage('pg_ctlcluster', 'postgresql')
  const bin = postgresBin()!
  const root = tempDir('sightline-bench-pg-')
  const port = await freePort()
  const asPostgres = (cmd: string[]) => (isRoot() ? ['runuser', '-u', 'postgres', '--', ...cmd] : cmd)
  if (isRoot()) {
    await run(['sh', '-c', 'id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres'])
    chownSync(root, Number((await run(['id', '-u', 'postgres'])).trim()), Number((await run(['id', '-g', 'postgres'])).trim()))
  }
  await run(asPostgres([`${bin}/initdb`, '-D', `${root}/data`, '-U', 'postgres', '-A', 'trust', '--no-sync']))
  const options = Object.entries({ listen_addresses: '127.0.0.1', max_connections: '200', ...settings })
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ')
  await run(asPostgres([`${bin}/pg_ctl`, '-D', `${root}/data`, '-l', `${root}/server.log`, '-w', 'start', '-o', `-p ${port} -k ${root} ${options}`]))
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      await run(asPostgres([`${bin}/pg_ctl`, '-D', `${root}/data`, '-m', 'fast', 'stop'])).catch(() => {})
      removeDir(root)
    },
  }
}
