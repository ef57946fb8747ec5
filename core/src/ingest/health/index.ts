import { Elysia } from 'elysia'
import { pingDatabase, type Database } from '../../db'
import { VERSION } from '../../version'
import type { WriterStats } from '../../writer'
import { checkDatabase, healthReport } from './service'

export interface HealthDeps {
  db: Database
  writerStats: () => WriterStats
  startedAt: number
  /** How long `/health` waits for the database before calling it degraded. */
  databaseTimeoutMs?: number
}

export function healthRoutes({ db, writerStats, startedAt, databaseTimeoutMs = 2000 }: HealthDeps) {
  // Uptime is read on a clock that only goes forward: on the wall clock, one set back an hour (NTP, a
  // resumed virtual machine) made it negative, and one set ahead added the hour.
  const startedOnMonotonic = performance.now() - (Date.now() - startedAt)
  return new Elysia({ name: 'ingest/health' })
    .get('/', () => ({ status: 'ok', service: 'sightline' }))
    .get('/health/simple', () => ({ status: 'ok' }))
    .get('/health', async ({ set }) => {
      const database = await checkDatabase(() => pingDatabase(db), databaseTimeoutMs)
      const report = healthReport({ database, writer: writerStats(), version: VERSION, startedAt: startedOnMonotonic, now: performance.now() })
      if (report.status !== 'ok') set.status = 503
      return report
    })
}
