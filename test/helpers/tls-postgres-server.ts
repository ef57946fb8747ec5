import { chmodSync, chownSync } from 'node:fs'
import { isRoot, removeDir, run, tempDir, which } from '../bench/lib/system'
import { postgresBinaries, startPostgresServer, type PostgresServer } from './postgres-server'

/**
 * Why a Postgres server with TLS cannot be started here, or undefined when it can: it needs the
 * server binaries (Debian package postgresql) and openssl, to make its certificate.
 */
export function tlsPostgresServerMissing(): string | undefined {
  if (!postgresBinaries()) return 'no Postgres server binaries under /usr/lib/postgresql (Debian package postgresql)'
  if (!which('openssl')) return 'no openssl, to make the server a certificate (Debian package openssl)'
  return undefined
}

/**
 * A throwaway Postgres server (see startPostgresServer) with `ssl=on`, on a self-signed certificate
 * made for the occasion: what managed Postgres services ask for. Its `url` still names no sslmode;
 * clients ask for TLS themselves (`sslmode=require`). The server reads its key only if the key is
 * the server user's and no one else's (mode 0600), so as root both files are given to `postgres`.
 */
export async function startTlsPostgresServer(): Promise<PostgresServer> {
  const certs = tempDir('sightline-pg-tls-')
  const cert = `${certs}/server.crt`
  const key = `${certs}/server.key`
  try {
    await run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', key, '-out', cert])
    chmodSync(key, 0o600)
    if (isRoot()) {
      await run(['sh', '-c', 'id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres'])
      const [uid, gid] = await Promise.all([run(['id', '-u', 'postgres']), run(['id', '-g', 'postgres'])])
      for (const path of [certs, cert, key]) chownSync(path, Number(uid.trim()), Number(gid.trim()))
    }
    const server = await startPostgresServer({ ssl: 'on', ssl_cert_file: cert, ssl_key_file: key })
    return {
      ...server,
      async close() {
        await server.close()
        removeDir(certs)
      },
    }
  } catch (error) {
    removeDir(certs)
    throw error
  }
}
