import { postgresBinaries, startPostgresServer } from '../../helpers/postgres-server'
import { ensureDebianPackage } from './system'

export interface PostgresServer {
  url: string
  port: number
  stop(): Promise<void>
}

/**
 * A throwaway Postgres server, as CI starts one (see startPostgresServer), with the binaries
 * installed from Debian when missing. `stop()` stops it and removes its folder.
 */
export async function startPostgres(settings: Record<string, string> = {}): Promise<PostgresServer> {
  if (!postgresBinaries()) await ensureDebianPackage('pg_ctlcluster', 'postgresql')
  const server = await startPostgresServer(settings)
  return { url: server.url, port: server.port, stop: () => server.close() }
}
