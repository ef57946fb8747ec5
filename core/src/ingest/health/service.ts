import type { DatabasePing } from '../../db'
import type { WriterStats } from '../../writer'

export interface DatabaseCheck {
  /** The database answered and takes writes: ingestion can store. */
  ok: boolean
  latencyMs: number | null
  /** Null when the database did not answer. */
  writable: boolean | null
}

export interface HealthReport {
  status: 'ok' | 'degraded'
  version: string
  uptimeSeconds: number
  checks: { database: DatabaseCheck; writer: WriterStats }
}

export function healthReport(input: { database: DatabaseCheck; writer: WriterStats; version: string; startedAt: number; now: number }): HealthReport {
  return {
    status: input.database.ok ? 'ok' : 'degraded',
    version: input.version,
    uptimeSeconds: Math.floor((input.now - input.startedAt) / 1000),
    checks: { database: input.database, writer: input.writer },
  }
}

/**
 * Pings the database, giving up after `timeoutMs`: a stopped server must not hang the probe. A database
 * that answers but refuses writes is not ok either: every ingestion request would be answered 503.
 */
export async function checkDatabase(ping: () => Promise<DatabasePing>, timeoutMs: number): Promise<DatabaseCheck> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)
  })
  try {
    const { latencyMs, writable } = await Promise.race([ping(), timeout])
    return { ok: writable, latencyMs: Math.round(latencyMs * 100) / 100, writable }
  } catch {
    return { ok: false, latencyMs: null, writable: null }
  } finally {
    clearTimeout(timer)
  }
}
