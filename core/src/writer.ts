import { errorText, type Database, type Orm, type PendingCopy } from './db'
import { ApiError } from './errors'
import type { Logger } from './log'
import { inLockOrder, type AlreadyStored, type Hand, type Sink, type SinkRows } from './sink'
import { faultOf, isRetryable, sqlState, TRANSACTION_ABORTED, UNIQUE_VIOLATION } from './storage-errors'

/**
 * Group commit. Every ingestion request turns into rows and hands them here; rows of many concurrent
 * requests coalesce into one transaction with one multi-row statement per table, and each request is
 * answered only once its rows are committed. A 200 therefore means durably stored.
 *
 * - Bounded: past `maxQueuedRows`/`maxQueuedBytes` new writes fail at once with 503 `overloaded`.
 * - A failed commit fails every request in it, and every request still queued, with 503
 *   `storage_unavailable` and `Retry-After`; for a short while after, writes fail fast instead of
 *   piling up behind a database that is down.
 * - A commit that does not finish within `commitTimeoutMs` counts as failed: a driver can wait forever
 *   on a half-open connection. It may still land later; writes are idempotent, so the retry is a no-op.
 * - A row the database rejects as data (bad text, out-of-range number) would sink everyone else's
 *   rows with it; the batch is split until the one request at fault is found, and only it fails.
 *   So is a batch whose statement fails for a reason of its own rather than the database's (see
 *   `faultOf`): whatever one request brings, it must not cost other requests, or other projects,
 *   their writes and the next second of fail-fast.
 */

/** Everything one request stores. */
export interface WriteRequest {
  projectId: string
  /** The project's monthly limit as the request's key resolved it; null means unlimited. */
  monthlyLimit: number | null
  /** Items counted against the monthly quota (0 for pings such as heartbeats). */
  items: number
  /** Roughly the bytes the rows take, for the batch and queue bounds. */
  bytes: number
  writes: SinkRows[]
}

/**
 * Runs first in every commit and decides which requests may be stored; the quota lives here, so it is
 * decided under the same row locks as the writes and holds across processes. A refused request fails
 * with the error the gate gives and none of its rows are written.
 */
export interface Gate {
  admit(tx: Orm, requests: readonly WriteRequest[]): Promise<GateDecision>
}

export interface GateDecision {
  /** Per request: null to store it, or the error to answer it with. */
  verdicts: (ApiError | null)[]
  /**
   * Runs after the sinks' writes in the same transaction (e.g. to count what was admitted). Last,
   * so that a lock it takes is held for as short a time as possible. One statement, sent at once (as
   * a sink's `singleStatement`).
   */
  record?: (tx: Orm) => Promise<void>
  /**
   * Runs after `record` when sinks found rows stored already, in the same transaction: takes back
   * what `record` counted for them. Resends are rare, so the common commit makes no extra round trip.
   */
  uncount?: (tx: Orm, alreadyStored: AlreadyStored) => Promise<void>
  /** Runs once the commit succeeded (e.g. to update a cache with what was counted). */
  onCommit?: () => void
  /**
   * Optional, asked once the commit succeeded for each request refused: true to decide it again in
   * the next commit instead of answering the refusal. The gate decides before the writes find resends
   * among what it admitted (`uncount`); counted as new meanwhile, they may have taken room that a
   * request refused beside them fits in.
   */
  decideAgain?: (index: number) => boolean
}

export interface WriterOptions {
  /** A batch closes at this many rows... */
  maxBatchRows?: number
  /** ...or at this many bytes. */
  maxBatchBytes?: number
  /** How long the first row of an idle writer waits for company; 0 means the next turn of the event loop. */
  lingerMs?: number
  /** Commits under way at once. */
  concurrency?: number
  maxQueuedRows?: number
  maxQueuedBytes?: number
  /** After a failed commit, writes fail fast for this long. */
  failFastMs?: number
  /** A commit not finished by then is answered as failed. */
  commitTimeoutMs?: number
  retryAfterSeconds?: number
  gate?: Gate
  /**
   * Milliseconds on a clock that only goes forward (`performance.now`): on the wall clock, one set
   * back an hour after a failed commit failed every request fast for the hour.
   */
  now?: () => number
}

export interface WriterStats {
  /** Rows waiting for a commit. */
  queued: number
  /** Rows in commits under way. */
  inflight: number
}

export interface Writer {
  write(request: WriteRequest): Promise<void>
  stats(): WriterStats
  /** Commits what is queued, then refuses new writes. */
  close(): Promise<void>
}

interface Pending {
  request: WriteRequest
  rows: number
  resolve(): void
  reject(error: unknown): void
}

const rowCount = (request: WriteRequest) => request.writes.reduce((n, w) => n + w.rows.length, 0)

export function createWriter(db: Database, log: Logger, options: WriterOptions = {}): Writer {
  const {
    maxBatchRows = 5_000,
    maxBatchBytes = 8 * 1024 * 1024,
    lingerMs = 0,
    concurrency = db.kind === 'postgres' ? 2 : 1,
    maxQueuedRows = 100_000,
    maxQueuedBytes = 128 * 1024 * 1024,
    failFastMs = 1_000,
    commitTimeoutMs = 10_000,
    retryAfterSeconds = 2,
    gate,
    now = () => performance.now(),
  } = options

  let queue: Pending[] = []
  let queuedRows = 0
  let queuedBytes = 0
  let inflightRows = 0
  let running = 0
  let scheduled = false
  let unavailableUntil = 0
  let closed = false
  const idle: (() => void)[] = []

  const unavailable = () =>
    new ApiError('storage_unavailable', 'storage is unavailable; nothing of this request was stored, retry later', { retryAfterSeconds })

  const schedule = () => {
    if (scheduled || running >= concurrency || queue.length === 0) return
    scheduled = true
    const full = queuedRows >= maxBatchRows || queuedBytes >= maxBatchBytes
    const run = () => {
      scheduled = false
      void flush()
    }
    if (full || lingerMs === 0) setImmediate(run)
    else setTimeout(run, lingerMs)
  }

  const takeBatch = (): Pending[] => {
    let rows = 0
    let bytes = 0
    let taken = 0
    while (taken < queue.length && (taken === 0 || (rows + queue[taken].rows <= maxBatchRows && bytes + queue[taken].request.bytes <= maxBatchBytes))) {
      rows += queue[taken].rows
      bytes += queue[taken].request.bytes
      taken++
    }
    const batch = queue.slice(0, taken)
    queue = queue.slice(taken)
    queuedRows -= rows
    queuedBytes -= bytes
    return batch
  }

  interface Committed extends GateDecision {
    /** What each sink was given to write. */
    written: SinkRows[]
  }

  async function commit(batch: Pending[]): Promise<Committed> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`commit took longer than ${commitTimeoutMs} ms`)), commitTimeoutMs)
    })
    try {
      return await Promise.race([transaction(batch), timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  function transaction(batch: Pending[]): Promise<Committed> {
    return db.transaction(async (tx, copyIn) => {
      const decision = gate ? await gate.admit(tx, batch.map((p) => p.request)) : { verdicts: batch.map(() => null) }
      const { verdicts } = decision
      const bySink = new Map<Sink<unknown>, SinkRows>()
      const entryOf = (sink: Sink<unknown>) => bySink.get(sink) ?? bySink.set(sink, { sink, rows: [] }).get(sink)!
      batch.forEach((pending, i) => {
        if (verdicts[i]) return
        for (const { sink, rows } of pending.request.writes) {
          const entry = entryOf(sink)
          for (const row of rows) entry.rows.push(row)
          for (const fed of sink.feeds ?? []) entryOf(fed)
        }
      })
      const ordered = inLockOrder([...bySink.values()])
      const copying = copyIn ? copyable(ordered, copyIn.maxTextLength) : undefined
      // One sink is copied, after the others: nothing may follow a COPY on the connection before its
      // rows, and the commit goes with them (see CopyIn). On Postgres it goes out right behind the
      // others' statements when none of them is followed by another after its answer, or else after
      // their answers, a round trip later.
      const copyAtOnce = copying && ordered.every((entry) => entry === copying.entry || entry.rows.length === 0 || entry.sink.singleStatement)
      // Issued together, the statements are pipelined on the transaction's connection: one round trip
      // instead of one per table. They still run in this order (sinks in lock order, then the record).
      // A sink that feeds others is waited for: the sinks after it may be given rows by it.
      const writes: Promise<void | AlreadyStored>[] = []
      const results: (void | AlreadyStored)[] = []
      let at = 0
      const hand: Hand = (sink, rows) => {
        const entry = bySink.get(sink as Sink<unknown>)
        // A fault of the code, not of the database: a TypeError fails the request at fault alone (see faultOf).
        if (!entry || entry === copying?.entry || ordered.indexOf(entry) <= at) throw new TypeError(`${ordered[at]?.sink.name} handed rows to ${sink.name}, which it does not feed`)
        for (const row of rows) entry.rows.push(row)
      }
      for (; at < ordered.length; at++) {
        const entry = ordered[at]
        if (entry === copying?.entry || entry.rows.length === 0) continue
        writes.push(entry.sink.write(tx, entry.rows, hand))
        if (entry.sink.feeds) results.push(...(await allSettledOrThrow(writes.splice(0))))
      }
      if (decision.record) writes.push(decision.record(tx))
      const copy = copying && copyAtOnce ? copyIn?.(copying.statement) : undefined
      const written = ordered.filter((entry) => entry.rows.length > 0)
      // (A failure here leaves the COPY to the transaction, which gives it up before rolling back.)
      let alreadyStored = sumPerProject([...results, ...(await allSettledOrThrow(writes))])
      if (copying && copyIn) {
        // Resends among the other sinks' rows are counted back before the commit: not with the COPY then.
        if (alreadyStored.size > 0) await copy?.cancel()
        else if (await copyAndCommit(copy ?? copyIn(copying.statement), copying.text)) return { ...decision, written }
        alreadyStored = sumPerProject([alreadyStored, await copying.entry.sink.write(tx, copying.entry.rows, hand)])
      }
      if (alreadyStored.size > 0) await decision.uncount?.(tx, alreadyStored)
      return { ...decision, written }
    })
  }

  /** Commits the batch; on a data error, splits it until the request at fault stands alone. */
  async function commitIsolating(batch: Pending[], attempt = 1): Promise<void> {
    try {
      const { verdicts, onCommit, decideAgain, written } = await commit(batch)
      onCommit?.()
      for (const { sink, rows } of written) sink.committed?.(rows)
      const again: Pending[] = []
      batch.forEach((pending, i) => {
        if (!verdicts[i]) pending.resolve()
        else if (decideAgain?.(i)) again.push(pending)
        else pending.reject(verdicts[i])
      })
      if (again.length > 0) requeue(again)
    } catch (error) {
      if (isRetryable(error) && attempt < 3) {
        // Said, because each is a commit lost (a deadlock costs a second before Postgres breaks it):
        // concurrent commits are meant never to wait on each other in a circle (see SinkPhase).
        log.warn('commit retried', { attempt, error: errorText(error) })
        return commitIsolating(batch, attempt + 1)
      }
      const fault = faultOf(error)
      if (fault === 'storage') {
        unavailableUntil = now() + failFastMs
        log.error('commit failed', { requests: batch.length, error: errorText(error) })
        for (const pending of batch) pending.reject(unavailable())
        failQueued()
      } else if (batch.length > 1) {
        const half = Math.ceil(batch.length / 2)
        await commitIsolating(batch.slice(0, half))
        await commitIsolating(batch.slice(half))
      } else if (fault === 'rows') {
        log.warn('rows refused by the database', { error: errorText(error) })
        batch[0].reject(new ApiError('validation_failed', 'a value in this request cannot be stored (invalid text, an out-of-range number or a value over a database limit)', { path: '/' }))
      } else {
        // Where our own code threw, its stack says where; a database's error says it all in its text.
        const stack = error instanceof TypeError || error instanceof RangeError ? error.stack : undefined
        log.error('a request could not be stored', { error: errorText(error), stack })
        batch[0].reject(new ApiError('internal_error', 'this request could not be stored because of a fault in the service; nothing of it was stored'))
      }
    }
  }

  /**
   * Fails what is queued, as fail-fast fails what comes next. Left queued, each would wait for a commit
   * of its own behind the database that just failed one: a lock held elsewhere or a server gone silent
   * had them answered after two commit timeouts or more (one per batch ahead of theirs), not one.
   */
  function failQueued(): void {
    const waiting = queue
    queue = []
    queuedRows = 0
    queuedBytes = 0
    for (const pending of waiting) pending.reject(unavailable())
  }

  /** Back at the head of the queue, first in the next commit (flush schedules it). */
  function requeue(pendings: Pending[]): void {
    for (const pending of pendings) {
      queuedRows += pending.rows
      queuedBytes += pending.request.bytes
    }
    queue = [...pendings, ...queue]
  }

  async function flush(): Promise<void> {
    const batch = takeBatch()
    if (batch.length === 0) return
    const rows = batch.reduce((n, p) => n + p.rows, 0)
    running++
    inflightRows += rows
    try {
      await commitIsolating(batch)
    } finally {
      running--
      inflightRows -= rows
      if (queue.length > 0) schedule()
      else if (running === 0) idle.splice(0).forEach((done) => done())
    }
  }

  return {
    write(request) {
      if (closed) return Promise.reject(unavailable())
      if (now() < unavailableUntil) return Promise.reject(unavailable())
      const rows = rowCount(request)
      if (queuedRows + rows > maxQueuedRows || queuedBytes + request.bytes > maxQueuedBytes) {
        return Promise.reject(new ApiError('overloaded', 'the write queue is full; nothing of this request was stored, retry later', { retryAfterSeconds: 1 }))
      }
      return new Promise<void>((resolve, reject) => {
        queue.push({ request, rows, resolve, reject })
        queuedRows += rows
        queuedBytes += request.bytes
        schedule()
      })
    },
    stats: () => ({ queued: queuedRows, inflight: inflightRows }),
    async close() {
      closed = true
      if (queue.length === 0 && running === 0) return
      await new Promise<void>((resolve) => {
        idle.push(resolve)
        schedule()
      })
    },
  }
}

/**
 * The sink to copy, if any can be: the one with the most rows, with its COPY and rows; none when
 * their text is longer than the database copies well.
 */
function copyable(written: SinkRows[], maxTextLength = Infinity): { entry: SinkRows; statement: string; text: string } | undefined {
  let entry: SinkRows | undefined
  for (const candidate of written) if (candidate.sink.copy && candidate.rows.length > (entry?.rows.length ?? 0)) entry = candidate
  const copy = entry?.sink.copy
  if (!entry || !copy) return undefined
  const text = copy.text(entry.rows)
  return text.length <= maxTextLength ? { entry, statement: copy.statement, text } : undefined
}

/**
 * A sink's rows by COPY, optimistically, with the commit: says whether they were. Nearly every batch
 * holds no row stored already, and is stored whole: nothing of it was a resend. A key stored already
 * (a resend, or the same row stored meanwhile by a concurrent commit) fails the COPY with
 * unique_violation and leaves the transaction as it was before it (see CopyIn), for the sink's own
 * insert, which skips and reports resends. Any other failure fails the commit, as the insert's would.
 */
async function copyAndCommit(copy: PendingCopy, text: string): Promise<boolean> {
  try {
    await copy.commit(text)
    return true
  } catch (error) {
    if (sqlState(error) !== UNIQUE_VIOLATION) throw error
    return false
  }
}

/**
 * Waits for every write (none is left running into a rolled-back transaction), then throws the error
 * that failed the transaction: pipelined statements after it fail only as "transaction aborted".
 */
async function allSettledOrThrow<T>(writes: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(writes)
  const failed = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed.length > 0) throw (failed.find((r) => sqlState(r.reason) !== TRANSACTION_ABORTED) ?? failed[0]).reason
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value)
}

function sumPerProject(results: readonly unknown[]): AlreadyStored {
  const sum: AlreadyStored = new Map()
  for (const result of results) {
    if (result instanceof Map) for (const [projectId, n] of result as AlreadyStored) if (n > 0) sum.set(projectId, (sum.get(projectId) ?? 0) + n)
  }
  return sum
}
