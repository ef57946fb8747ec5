/**
 * DATABASE_URL as postgres.js takes it. postgres.js reads the server's host and port from the URL's
 * authority only, and hands every query parameter it does not know to the server as a setting. The
 * connection URIs operators copy from libpq (psql, their platform's docs) may name the server in
 * the query (`?host=...&port=...`, which libpq lets override the authority) and a Unix socket's
 * directory as a host that is an absolute path, in the query or percent-encoded as the authority:
 *
 *   postgresql:///sightline?host=/var/run/postgresql
 *   postgresql://sightline@%2Fvar%2Frun%2Fpostgresql:5433/sightline
 *
 * postgres.js tried localhost for those, or sent `host` to the server as a setting, which it refuses.
 * Here they become postgres.js's `host` and `port` options (it takes a host that is a path for a
 * socket's directory too), and the URL keeps everything else (user, password, database, sslmode and
 * the rest of the query).
 */
export interface PostgresTarget {
  url: string
  host?: string
  port?: number
}

const URI = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?$/
const AUTHORITY_PORT = /:(\d+)$/

export function postgresTarget(url: string): PostgresTarget {
  const parts = URI.exec(url)
  if (!parts) return { url }
  const [, scheme, userinfo, authority, path, query = ''] = parts
  const params = new URLSearchParams(query)
  const socketInAuthority = /^%2F/i.test(authority)
  if (!params.has('host') && !params.has('port') && !socketInAuthority) return { url }

  const authorityPort = socketInAuthority ? AUTHORITY_PORT.exec(authority)?.[1] : undefined
  const socketDir = socketInAuthority ? decodeURIComponent(authority.replace(AUTHORITY_PORT, '')) : undefined
  const host = params.get('host') || socketDir
  const port = params.get('port') || authorityPort
  if (port !== undefined && !/^\d{1,5}$/.test(port)) throw new Error(`port ${JSON.stringify(port)} is not a port number`)
  params.delete('host')
  params.delete('port')
  // The options win over the URL's authority, which stays as it was unless it is the socket, or
  // empty beside a user: such a URL does not parse, so it gets a stand-in host.
  const standIn = socketInAuthority || (authority === '' && userinfo !== undefined && host !== undefined)
  const rest = params.size ? `?${params}` : ''
  const target: PostgresTarget = { url: `${scheme}${userinfo === undefined ? '' : `${userinfo}@`}${standIn ? 'localhost' : authority}${path}${rest}` }
  if (host) target.host = host
  if (port !== undefined) target.port = Number(port)
  return target
}
