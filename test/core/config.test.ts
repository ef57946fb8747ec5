import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '@sightline/core/config'

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
})
