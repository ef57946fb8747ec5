import { afterAll, beforeAll } from 'bun:test'
import { sql } from 'drizzle-orm'
import { createApp, type App } from '@sightline/core/app'
import { loadConfig, type Config } from '@sightline/core/config'
import { postgresDatabase } from '@sightline/core/db'
import { createLogger, type Logger } from '@sightline/core/log'
import { createProject, type CreatedProject } from '@sightline/core/projects/service'
import { startServices, type Services, type ServicesOptions } from '@sightline/core/services'
import type { WriterOptions } from '@sightline/core/writer'
import { createTestDatabase, type TestDatabase } from './database'

export interface TestCore {
  app: App
  database: TestDatabase
  services: Services
  config: Config
  log: Logger
  /** A project made for this core, with a key per default environment. */
  project: CreatedProject
  /** The project's development key. */
  key: string
  /** Sends a request through `app.handle`, no socket involved. */
  request(path: string, init?: RequestInit): Promise<Response>
  /** POSTs JSON with the project key as a Bearer header (override with `key: null`). */
  post(path: string, body: unknown, options?: { key?: string | null; headers?: Record<string, string> }): Promise<Response>
  /** Starts listening on a free port and returns the base URL. */
  listen(): Promise<string>
  close(): Promise<void>
}

export interface StartCoreOptions {
  env?: Record<string, string>
  database?: TestDatabase
  log?: Logger
  monthlyLimit?: number | null
  writer?: Omit<WriterOptions, 'gate'>
  /** A short interval in the tests of the sweep itself. */
  presenceSweep?: ServicesOptions['presenceSweep']
}

export async function startCore(options: StartCoreOptions = {}): Promise<TestCore> {
  const config = loadConfig({ LOG_LEVEL: 'silent', ...options.env })
  const database = options.database ?? (await createTestDatabase())
  const log = options.log ?? createLogger(config.logLevel)
  const services = await startServices(database.db, log, { writer: options.writer, presenceSweep: options.presenceSweep })
  const project = await createProject(database.db.orm, { name: 'test', monthlyLimit: options.monthlyLimit ?? null })
  const app = createApp({ config, db: database.db, log, ...services })
  const key = project.keys.development

  const request = (path: string, init?: RequestInit) => app.handle(new Request(`http://localhost${path}`, init))
  return {
    app,
    database,
    services,
    config,
    log,
    project,
    key,
    request,
    post(path, body, { key: keyOverride, headers } = {}) {
      const useKey = keyOverride === undefined ? key : keyOverride
      return request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(useKey ? { authorization: `Bearer ${useKey}` } : {}), ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      })
    },
    async listen() {
      app.listen({ port: 0, hostname: '127.0.0.1' })
      return `http://127.0.0.1:${app.server!.port}`
    },
    async close() {
      if (app.server) await app.stop(true)
      await services.stop()
      if (!options.database) await database.close()
    },
  }
}

/**
 * A second core on the first one's Postgres database, as another process sharing it would be (with a
 * project of its own; requests may use the first one's key). Closing it closes its connections.
 */
export async function startCoreBeside(first: TestCore): Promise<TestCore> {
  const db = postgresDatabase(first.database.url!)
  const core = await startCore({ database: { db, close: () => db.close() } })
  return { ...core, close: () => core.close().then(() => db.close()) }
}

export interface GroupingCores {
  database: TestDatabase
  core: TestCore
  /** Its writer waits for company (500 ms), so that requests sent to it at once commit together. */
  grouping: TestCore
}

/**
 * For the tests of the file or describe it is called in: a database of their own and two cores on it,
 * `core` and `grouping` (see GroupingCores), started before the tests and closed after them.
 */
export function groupingCores(): GroupingCores {
  const cores = {} as GroupingCores
  beforeAll(async () => {
    cores.database = await createTestDatabase()
    cores.core = await startCore({ database: cores.database })
    cores.grouping = await startCore({ database: cores.database, writer: { lingerMs: 500 } })
  })
  afterAll(async () => {
    await cores.grouping?.close()
    await cores.core?.close()
    await cores.database?.close()
  })
  return cores
}

/** Every event counted against a monthly limit in the core's database, all projects and months together. */
export const countedEvents = async (core: TestCore) =>
  Number((await core.database.db.rows<{ events: string }>(sql`select coalesce(sum(events), 0)::text as events from usage_counters`))[0].events)

/** A logger whose lines are kept for assertions. */
export function memoryLogger(level: Parameters<typeof createLogger>[0] = 'debug') {
  const lines: string[] = []
  return { log: createLogger(level, (line) => lines.push(line)), lines }
}
