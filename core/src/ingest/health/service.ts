import type { WriterStats } from '../../writer'

export interface DatabaseCheck {
  ok: boolean
  latencyMs: number | null
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

/** Pings the database, giving up after `timeoutMs`: a stopped server must not hang the probe. */
export async function checkDatabase(ping: () => Promise<number>, timeoutMs: number): Promise<DatabaseCheck> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)
  })
  try {
    const latency = await Promise.race([ping(), timeout])
    return { ok: true, latencyMs: Math.round(latency * 100) / 100 }
  } catch {
    return { ok: false, latencyMs: null }
  } finally {
    clearTimeout(timer)
  }
}
