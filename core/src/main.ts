import { resolve } from 'node:path'
import { createApp } from './app'
import { ConfigError, loadConfig, withoutSecrets, type Config } from './config'
import { DatabaseInUseError, errorMessage, openDatabase } from './db'
import { createClientLocator } from './ingest/geo/locator'
import { geoDatabasePaths } from './ingest/geo/reader'
import { openGeoWorker } from './ingest/geo/worker-client'
import { createLogger, type Logger } from './log'
import { startMemoryGuard } from './memory'
import { ensureDefaultProject, type CreatedProject } from './projects/service'
import { startServices, type Services } from './services'
import { exitOnUncaughtExceptions, logUnhandledRejections } from './unhandled'

/**
 * How long the requests under way when a stop is asked for may take to be answered. One that is still
 * going after that (a client trickling its body) is cut off unanswered: nothing of it was acknowledged.
 */
const REQUEST_GRACE_MS = 5_000
/** A stop that has not finished by then (a database that no longer answers) ends the process anyway. */
const STOP_DEADLINE_MS = 15_000
/**
 * How long a start that failed once the database was open (a port taken, a migration refused) waits
 * for it to close before exiting anyway: a database that stopped answering must not keep core up.
 */
const FAILED_START_CLOSE_MS = 5_000
/**
 * A signal this soon after the first is the same one delivered twice, not an operator asking again:
 * under `npm start`, Ctrl-C (or a supervisor signalling the whole process group, as systemd does)
 * reaches core directly and again through npm, which forwards what it gets, a few milliseconds later.
 */
const REPEATED_SIGNAL_MS = 200

/** For the person who started core: the only lines of its output that are not log lines, and the only ones with a key. */
function printWelcome(project: CreatedProject, port: number): void {
  process.stdout.write(
    [
      '',
      `  Created the project "${project.name}" (${project.projectId}).`,
      `  Its development key, shown this once:  ${project.keys.development}`,
      `  Send data:  curl -X POST http://localhost:${port}/api/ingestion/customEvent \\`,
      `                -H 'Authorization: Bearer ${project.keys.development}' \\`,
      `                -d '{"sessionId":"s1","eventName":"hello"}'`,
      // Its production key is made too, and never shown: rotating it issues one to show.
      `  A production key:  npm run -s admin -- key rotate --project ${project.projectId} --env production`,
      '',
      '',
    ].join('\n'),
  )
}

/** `host:port` as a URL writes it: an IPv6 address in brackets. */
const hostAndPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`

function listen(app: ReturnType<typeof createApp>, config: Config) {
  try {
    // Not shared with another process (Elysia asks Bun for SO_REUSEPORT): a second core on this port
    // would take part of the traffic, into whatever database it has.
    return app.listen({ port: config.port, hostname: config.host, reusePort: false })
  } catch (error) {
    throw new ConfigError(`cannot listen on ${hostAndPort(config.host, config.port)} (HOST, PORT): ${(error as Error).message}`)
  }
}

async function main(): Promise<void> {
  const config = loadConfig()
  const log = createLogger(config.logLevel)
  // Before anything is opened: a signal while core starts waits for the start to finish, then stops
  // it (see stopOnSignals).
  const signals = stopOnSignals(log)
  logUnhandledRejections(log)
  exitOnUncaughtExceptions(log)
  // Whatever the configuration names is checked before the database is touched: a first start that
  // failed after creating the default project would have made a key that is never shown.
  const geo = await openGeoWorker(geoDatabasePaths(config.geoipDb), log)
  const locator = createClientLocator({ ...config, log }, geo)
  const db = await openDatabase(config)
  // Set inside the callback, which TypeScript does not follow: typed by a cast rather than narrowed to null.
  let created = null as CreatedProject | null
  let app: ReturnType<typeof listen> | undefined
  let services: Services | undefined
  try {
    const unknownMigrations = await db.migrate(
      async (orm) => {
        created = await ensureDefaultProject(orm)
      },
      () => log.info('waiting for another core process to finish migrating the database'),
    )
    if (unknownMigrations > 0) {
      log.warn('the database was migrated by a newer core; this one serves on, but cannot undo those migrations', { unknownMigrations })
    }
    try {
      services = await startServices(db, log)
      app = listen(createApp({ config, db, log, locator, ...services }), config)
    } finally {
      // Even when the start fails from here on (the port is taken): the key exists, and is shown only now.
      if (created) {
        printWelcome(created, app?.server?.port ?? config.port)
        log.info('created the default project', { project: created.projectId })
      }
    }
  } catch (error) {
    // Closed before exiting: an embedded database left open is left as after a crash, and the next
    // start (the port freed) first replays its write-ahead log to recover.
    const opened = services
    const close = async () => {
      await opened?.stop()
      await db.close()
    }
    await Promise.race([close().catch(() => {}), Bun.sleep(FAILED_START_CLOSE_MS)])
    throw error
  }
  // Where the embedded database is, as an absolute path: DATA_DIR is relative to wherever core was started.
  const dataDir = db.kind === 'embedded' ? resolve(config.dataDir) : undefined
  log.info('listening', { url: `http://${hostAndPort(config.host, app.server!.port!)}`, database: db.kind, dataDir })
  startMemoryGuard()

  const server = app.server!
  const running = services
  signals.stopWith(async () => {
    const started = performance.now()
    // Stop taking connections and answer the requests under way, then commit what was accepted and
    // close the database.
    const answered = await Promise.race([app.stop().then(() => true), Bun.sleep(REQUEST_GRACE_MS).then(() => false)])
    // Said, as the stop's other bound is: an operator who sees clients' errors at a deploy learns why.
    if (!answered) log.warn('requests still under way cut off unanswered', { requests: server.pendingRequests, afterMs: REQUEST_GRACE_MS })
    await server.stop(true)
    await running.stop()
    await db.close()
    geo.close()
    // Tells a clean stop from a killed process, which says nothing.
    log.info('stopped', { ms: Math.round(performance.now() - started) })
  })
}

/**
 * Stops core on SIGTERM or SIGINT with what `stopWith` is given once core is up. A signal while core
 * starts lets the start finish first, then stops it as any other: the default action (the process
 * killed, exit 143) would cut short whatever step was under way, and a first start's initdb cut short
 * (seconds of it, on the embedded database) leaves a DATA_DIR that no later start can open; a new
 * default project's key would never be shown. A second signal exits at once, as documented.
 */
function stopOnSignals(log: Logger): { stopWith(stop: () => Promise<void>): void } {
  let stopping = false
  let firstSignalAt = 0
  let stop: (() => Promise<void>) | undefined
  const run = (given: () => Promise<void>) =>
    given().then(
      // A request's log line is written a turn after its answer (Elysia's afterResponse): the answers
      // given while the stop committed get theirs before the process ends.
      () => setImmediate(() => process.exit(0)),
      (error) => {
        log.error('shutdown failed', { error: errorMessage(error) })
        process.exit(1)
      },
    )
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping && performance.now() - firstSignalAt < REPEATED_SIGNAL_MS) return
    if (stopping) {
      // Asked again: exit now. A request not answered yet was never acknowledged, so nothing acknowledged is lost.
      log.warn('stopping at once', { signal })
      process.exit(1)
    }
    stopping = true
    firstSignalAt = performance.now()
    log.info('shutting down', { signal })
    setTimeout(() => {
      log.error('shutdown took too long; exiting', { afterMs: STOP_DEADLINE_MS })
      process.exit(1)
    }, STOP_DEADLINE_MS).unref()
    // Still starting: stopWith runs the stop once the start is done.
    if (stop) run(stop)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    stopWith(given) {
      stop = given
      if (stopping) run(stop)
    },
  }
}

main().catch((error) => {
  // One line that says what failed and which setting to change; the stack only at LOG_LEVEL=debug.
  const expected = error instanceof ConfigError || error instanceof DatabaseInUseError
  let text = expected ? error.message : `could not start: ${errorMessage(error)}`
  if (!expected && process.env.LOG_LEVEL === 'debug' && error?.stack) text += `\n${error.stack}`
  process.stderr.write(`sightline: ${withoutSecrets(text, process.env)}\n`)
  process.exit(1)
})
