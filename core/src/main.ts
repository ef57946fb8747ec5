import { createApp } from './app'
import { ConfigError, loadConfig } from './config'
import { DatabaseInUseError, openDatabase } from './db'
import { createLogger } from './log'
import { startMemoryGuard } from './memory'
import { ensureDefaultProject, type CreatedProject } from './projects/service'
import { startServices } from './services'

function printWelcome(project: CreatedProject, port: number): void {
  process.stdout.write(
    [
      '',
      `  Created the project "${project.name}" (${project.projectId}).`,
      `  Its development key, shown this once:  ${project.keys.development}`,
      `  Send data:  curl -X POST http://localhost:${port}/api/ingestion/customEvent \\`,
      `                -H 'Authorization: Bearer ${project.keys.development}' \\`,
      `                -d '{"sessionId":"s1","eventName":"hello"}'`,
      `  More keys:  npm run -s admin -- key list --project ${project.projectId}`,
      '',
      '',
    ].join('\n'),
  )
}

async function main(): Promise<void> {
  const config = loadConfig()
  const log = createLogger(config.logLevel)
  const db = await openDatabase(config)
  let created: CreatedProject | null = null
  await db.migrate(async (orm) => {
    created = await ensureDefaultProject(orm)
  })
  const services = await startServices(db, log)
  const app = createApp({ config, db, log, ...services }).listen({ port: config.port, hostname: config.host })
  if (created) printWelcome(created, app.server!.port!)
  log.info('listening', { url: `http://${config.host}:${app.server!.port}`, database: db.kind })
  startMemoryGuard()

  const shutdown = async (signal: string) => {
    log.info('shutting down', { signal })
    // Stop taking requests, commit what was accepted, then close the database.
    await app.stop()
    await services.stop()
    await db.close()
    process.exit(0)
  }
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
}

main().catch((error) => {
  const expected = error instanceof ConfigError || error instanceof DatabaseInUseError
  process.stderr.write(`sightline: ${expected ? error.message : (error?.stack ?? error)}\n`)
  process.exit(1)
})
