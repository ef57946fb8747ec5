import postgres from 'postgres'

/** Shares of the samples, 0 to 1. */
export interface WaitShares {
  /** Running: on a core, or ready for one. */
  cpu: number
  /** Waiting for the WAL to reach the disk: fsync, or the lock of another backend's. */
  wal: number
  /** Inside a transaction, waiting for the client's next statement or COPY data: a round trip. */
  client: number
  /** Waiting for a lock on a row or table another transaction holds. */
  lock: number
  other: number
}

/** How each wait event of pg_stat_activity counts. */
function kindOf(type: string | null, event: string | null): keyof WaitShares {
  if (type === null) return 'cpu'
  if (event === 'WALSync' || event === 'WALWrite' || event === 'WALInitSync' || event === 'WALInsert') return 'wal'
  if (type === 'Client' && event === 'ClientRead') return 'client'
  if (type === 'Lock') return 'lock'
  return 'other'
}

/**
 * What the server's client backends do while `load` runs, from pg_stat_activity every few
 * milliseconds: each backend in a transaction or a statement (not idle between transactions) is
 * one sample. It says where a commit's time goes, which no throughput figure does: for a
 * single-threaded core and a server on the same two cores, it is mostly waiting.
 */
export async function sampleWaits(url: string, load: Promise<unknown>): Promise<WaitShares> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const counts: WaitShares = { cpu: 0, wal: 0, client: 0, lock: 0, other: 0 }
  let running = true
  const sampling = (async () => {
    while (running) {
      const rows = await sql<{ type: string | null; event: string | null }[]>`
        select wait_event_type as type, wait_event as event from pg_stat_activity
        where backend_type = 'client backend' and pid <> pg_backend_pid() and state <> 'idle'`
      for (const { type, event } of rows) counts[kindOf(type, event)]++
      await Bun.sleep(5)
    }
  })()
  // A failed sample ends the sampling; it is reported once the load is done, not as an unhandled rejection meanwhile.
  sampling.catch(() => {})
  try {
    await load
    return sharesOf(counts)
  } finally {
    running = false
    await sampling
    await sql.end()
  }
}

function sharesOf(counts: WaitShares): WaitShares {
  const total = Object.values(counts).reduce((n, c) => n + c, 0) || 1
  return Object.fromEntries(Object.entries(counts).map(([kind, n]) => [kind, n / total])) as unknown as WaitShares
}

export const describeShares = (s: WaitShares): string =>
  `waiting for core ${pct(s.client)}, for the WAL on disk ${pct(s.wal)}, running ${pct(s.cpu)}, waiting on locks ${pct(s.lock)}, other ${pct(s.other)}`

const pct = (share: number) => `${Math.round(share * 100)}%`
