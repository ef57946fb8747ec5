import { Type as T, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

const LogLevel = T.Union([T.Literal('debug'), T.Literal('info'), T.Literal('warn'), T.Literal('error'), T.Literal('silent')])

/** The environment, as documented in the README. Read and validated once at boot, then passed down. */
const Env = T.Object({
  PORT: T.Integer({ minimum: 0, maximum: 65535, default: 8000 }),
  HOST: T.String({ default: '0.0.0.0' }),
  DATABASE_URL: T.Optional(T.String({ minLength: 1 })),
  DATA_DIR: T.String({ default: './data' }),
  TRUSTED_PROXIES: T.String({ default: '' }),
  INTERNAL_SECRET: T.Optional(T.String({ minLength: 16 })),
  GEOIP_DB: T.Optional(T.String({ minLength: 1 })),
  MAX_BODY_BYTES: T.Integer({ minimum: 1024, default: 1024 * 1024 }),
  MAX_UPLOAD_BODY_BYTES: T.Integer({ minimum: 1024, default: 5 * 1024 * 1024 }),
  LOG_LEVEL: LogLevel,
})

export type LogLevel = Static<typeof LogLevel>

export interface Config {
  port: number
  host: string
  /** Unset: the embedded PGlite database under `dataDir`. */
  databaseUrl?: string
  dataDir: string
  /** CIDRs whose `X-Forwarded-For` is believed. */
  trustedProxies: string[]
  /** Enables `/api/internal/*` when set. */
  internalSecret?: string
  geoipDb?: string
  /** Body limit of every route but the large ones. */
  maxBodyBytes: number
  /** Body limit of `/events` (replay chunks) and `/sourcemaps`. */
  maxUploadBodyBytes: number
  logLevel: LogLevel
}

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.fromEntries(
    Object.keys(Env.properties)
      .filter((name) => env[name] !== undefined && env[name] !== '')
      .map((name) => [name, env[name]]),
  )
  known.LOG_LEVEL ??= 'info'
  const value = Value.Convert(Env, Value.Default(Env, known))
  const problems = [...Value.Errors(Env, value)].map((e) => `${e.path.slice(1)}: ${e.message}`)
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`)
  const checked = value as Static<typeof Env>
  return {
    port: checked.PORT,
    host: checked.HOST,
    databaseUrl: checked.DATABASE_URL,
    dataDir: checked.DATA_DIR,
    trustedProxies: checked.TRUSTED_PROXIES.split(',').map((cidr) => cidr.trim()).filter(Boolean),
    internalSecret: checked.INTERNAL_SECRET,
    geoipDb: checked.GEOIP_DB,
    maxBodyBytes: checked.MAX_BODY_BYTES,
    maxUploadBodyBytes: checked.MAX_UPLOAD_BODY_BYTES,
    logLevel: checked.LOG_LEVEL,
  }
}
