import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, Environment, loadConfig, withoutPassword, withoutSecrets } from '@sightline/core/config'
import { ROOT } from '../helpers/process'

describe('config', () => {
  test('defaults serve on 8000 with the embedded database under ./data', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({ port: 8000, dataDir: './data', maxBodyBytes: 1048576, maxUploadBodyBytes: 5242880, logLevel: 'info' })
    expect(config.databaseUrl).toBeUndefined()
    expect(config.internalSecret).toBeUndefined()
  })

  test('reads and converts the environment', () => {
    const config = loadConfig({ PORT: '9001', TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1/32', MAX_BODY_BYTES: '2048', LOG_LEVEL: 'warn', DATABASE_URL: 'postgres://x/y' })
    expect(config.port).toBe(9001)
    expect(config.trustedProxies).toEqual(['10.0.0.0/8', '127.0.0.1/32'])
    expect(config.maxBodyBytes).toBe(2048)
    expect(config.logLevel).toBe('warn')
    expect(config.databaseUrl).toBe('postgres://x/y')
  })

  test('rejects bad values with every problem named', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).toThrow(ConfigError)
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/)
    expect(() => loadConfig({ INTERNAL_SECRET: 'short' })).toThrow(/INTERNAL_SECRET/)
  })

  test('the internal secret is taken without the spaces around it, as a presented one is read', () => {
    expect(loadConfig({ INTERNAL_SECRET: ' internal-secret-0123 \n' }).internalSecret).toBe('internal-secret-0123')
    // Spaces do not make up its length.
    expect(() => loadConfig({ INTERNAL_SECRET: '   short      \t      ' })).toThrow(/INTERNAL_SECRET must be at least 16 characters long/)
  })

  test('whole numbers are digits only: no value is read as a smaller one', () => {
    for (const bad of ['1.5', '8e3', '0x1f90', '8000abc', '-1', '1e999']) expect(() => loadConfig({ PORT: bad }), bad).toThrow(/PORT must be a port number/)
    expect(() => loadConfig({ MAX_BODY_BYTES: '2e6' })).toThrow('MAX_BODY_BYTES must be a whole number of bytes from 1024 to 1073741824 (got "2e6")')
    expect(() => loadConfig({ MAX_UPLOAD_BODY_BYTES: '99999999999999999999' })).toThrow(/MAX_UPLOAD_BODY_BYTES/)
    expect(loadConfig({ PORT: ' 9001 ' }).port).toBe(9001)
  })

  test('a problem quotes the value as it was given, not as it was converted', () => {
    expect(() => loadConfig({ MAX_UPLOAD_BODY_BYTES: '99999999999999999999' })).toThrow(
      'MAX_UPLOAD_BODY_BYTES must be a whole number of bytes from 1024 to 1073741824 (got "99999999999999999999")',
    )
    expect(() => loadConfig({ PORT: '070000' })).toThrow('PORT must be a port number from 0 to 65535 (got "070000")')
  })

  test('each problem names its variable and what it takes, once', () => {
    const error = (() => {
      try {
        loadConfig({ PORT: '80.5', LOG_LEVEL: 'loud' })
      } catch (caught) {
        return (caught as Error).message
      }
    })()
    expect(error).toBe(
      'invalid configuration: PORT must be a port number from 0 to 65535 (got "80.5"); LOG_LEVEL must be one of debug, info, warn, error, silent (got "loud")',
    )
  })

  test('DATABASE_URL is a Postgres connection string; secrets are never repeated in the message', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://u:p@db/x' }).databaseUrl).toBe('postgresql://u:p@db/x')
    expect(() => loadConfig({ DATABASE_URL: 'mysql://u:pa55word@db/x' })).toThrow('DATABASE_URL must be a postgres:// or postgresql:// connection string')
    expect(() => loadConfig({ DATABASE_URL: 'db.internal:5432' })).toThrow(/DATABASE_URL/)
    for (const env of [{ DATABASE_URL: 'mysql://u:pa55word@db/x' }, { INTERNAL_SECRET: 'pa55word' }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError)
      expect(() => loadConfig(env)).not.toThrow(/pa55word/)
    }
  })
})

describe('secrets in what is printed', () => {
  test('a connection string loses its password, wherever it is given', () => {
    expect(withoutPassword('postgres://app:s3cret@db:5432/sightline')).toBe('postgres://app:***@db:5432/sightline')
    expect(withoutPassword('postgresql://app@db/sightline?password=s3cret&sslmode=require')).toBe('postgresql://app@db/sightline?password=***&sslmode=require')
    expect(withoutPassword('postgres://app:s3cret@[db/x')).toBe('the connection string')
  })

  test("an error's text loses every secret setting's value", () => {
    const env = { DATABASE_URL: 'postgres://app:p%40ss%2Fw0rd@db/x', INTERNAL_SECRET: 'internal-secret-0123' }
    const text = `failed on postgres://app:p%40ss%2Fw0rd@db/x; auth p%40ss%2Fw0rd or p@ss/w0rd; header internal-secret-0123`
    expect(withoutSecrets(text, env)).toBe('failed on postgres://app:***@db/x; auth *** or ***; header ***')
  })
})

describe("README's configuration table", () => {
  test('names every variable core reads, with its default', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Admin commands'))
    const rows = [...table.matchAll(/^\| `([A-Z_]+)` \| ([^|]+) \|/gm)].map(([, name, fallback]) => [name, fallback.trim()] as const)
    expect(rows.map(([name]) => name).sort()).toEqual(Object.keys(Environment.properties).sort())
    for (const [name, fallback] of rows) {
      const schema = Environment.properties[name as keyof typeof Environment.properties] as { default?: unknown }
      const documented = fallback.match(/^`(.*)`$/)?.[1]
      if (documented !== undefined) expect(String(schema.default), name).toBe(documented)
      else expect(['unset', 'empty', 'bundled'], name).toContain(fallback)
      if (fallback === 'empty') expect(schema.default, name).toBe('')
      if (fallback === 'unset' || fallback === 'bundled') expect(schema.default, name).toBeUndefined()
    }
  })
})
