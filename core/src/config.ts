import { Type as T, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { DEFAULT_BODY_MEMORY_BYTES } from './http/body-budget'

const LogLevel = T.Union([T.Literal('debug'), T.Literal('info'), T.Literal('warn'), T.Literal('error'), T.Literal('silent')], {
  expected: 'one of debug, info, warn, error, silent',
  default: 'info',
})

/** Bodies are read into memory whole: a limit past this is no limit. */
const MAX_BODY_LIMIT = 1024 * 1024 * 1024
const bodyLimit = (fallback: number) =>
  T.Integer({ minimum: 1024, maximum: MAX_BODY_LIMIT, default: fallback, expected: `a whole number of bytes from 1024 to ${MAX_BODY_LIMIT}` })

/**
 * The environment, as documented in the README. Read and validated once at boot, then passed down.
 * `expected` is what an error says the variable takes; a `secret` one's value is never repeated in it.
 */
export const Environment = T.Object({
  PORT: T.Integer({ minimum: 0, maximum: 65535, default: 8000, expected: 'a port number from 0 to 65535' }),
  HOST: T.String({ default: '0.0.0.0' }),
  DATABASE_URL: T.Optional(T.String({ pattern: '^postgres(ql)?://', expected: 'a postgres:// or postgresql:// connection string', secret: true })),
  DATA_DIR: T.String({ default: './data' }),
  TRUSTED_PROXIES: T.String({ default: '' }),
  INTERNAL_SECRET: T.Optional(T.String({ minLength: 16, expected: 'at least 16 characters long', secret: true })),
  GEOIP_DB: T.Optional(T.String({ minLength: 1 })),
  MAX_BODY_BYTES: bodyLimit(1024 * 1024),
  MAX_UPLOAD_BODY_BYTES: bodyLimit(5 * 1024 * 1024),
  // What the bodies of every route hold at once (http/body-budget.ts).
  MAX_BODY_MEMORY_BYTES: T.Integer({ minimum: 1024 * 1024, maximum: 64 * MAX_BODY_LIMIT, default: DEFAULT_BODY_MEMORY_BYTES, expected: `a whole number of bytes from 1048576 to ${64 * MAX_BODY_LIMIT}` }),
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
  /** Bytes of request bodies held at once, all routes together; past it a request is answered 503 `overloaded`. */
  maxBodyMemoryBytes: number
  logLevel: LogLevel
}

/**
 * A setting's text as it is checked. The internal secret is taken without the spaces around it: the
 * route reads a presented secret so (a header's value), and one configured with them, as an env
 * file's trailing space leaves it, could never match: the route stayed closed with a 401 nobody
 * could explain.
 */
const settingText = (name: string, text: string) => (name === 'INTERNAL_SECRET' ? text.trim() : text)

/** A setting that cannot be used. Its message names the variable, and never holds a secret's value. */
export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const names = Object.keys(Environment.properties) as (keyof typeof Environment.properties)[]
  const given = Object.fromEntries(names.filter((name) => env[name] !== undefined && env[name] !== '').map((name) => [name, settingText(name, env[name]!)]))
  const problems = new Map<string, string>()
  const problem = (name: string) => {
    const schema = Environment.properties[name as keyof typeof Environment.properties] as TSchema
    const shown = schema.secret || given[name] === undefined ? '' : ` (got "${given[name]}")`
    problems.set(name, `${name} must be ${schema.expected ?? 'set to a valid value'}${shown}`)
  }
  // Only digits make a whole number: TypeBox's conversion would read "1.5" as 1 and "8e3" as 8.
  for (const name of names) {
    if (Environment.properties[name].type === 'integer' && given[name] !== undefined && !/^\s*\d+\s*$/.test(given[name])) problem(name)
  }
  // A copy: TypeBox converts in place, and a problem quotes the value as it was given ("99999999999999999999", not "1e+20").
  const value = Value.Convert(Environment, Value.Default(Environment, { ...given }))
  for (const error of Value.Errors(Environment, value)) {
    const name = error.path.slice(1)
    if (!problems.has(name)) problem(name)
  }
  if (problems.size > 0) throw new ConfigError(`invalid configuration: ${[...problems.values()].join('; ')}`)
  const checked = value as Static<typeof Environment>
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
    maxBodyMemoryBytes: checked.MAX_BODY_MEMORY_BYTES,
    logLevel: checked.LOG_LEVEL,
  }
}

/** A connection string as it may be printed: its password replaced. */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***')
    return parsed.toString()
  } catch {
    return 'the connection string'
  }
}

/** Text as it may be printed, e.g. an error's: no secret setting's value in it (DATABASE_URL's password, INTERNAL_SECRET). */
export function withoutSecrets(text: string, env: Record<string, string | undefined> = process.env): string {
  const url = env.DATABASE_URL
  if (url) text = text.replaceAll(url, withoutPassword(url))
  const password = (url && URL.parse(url)?.password) || undefined
  for (const secret of [env.INTERNAL_SECRET, password, password && decoded(password)]) {
    if (secret && secret.length >= 4) text = text.replaceAll(secret, '***')
  }
  return text
}

const decoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
