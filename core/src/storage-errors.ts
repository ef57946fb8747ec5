/**
 * What a failed statement or commit says about whose fault it was, read from the SQLSTATE the
 * database sent (either engine) or the error the driver threw. The writer decides by it whom to
 * answer what (see faultOf).
 */

export const UNIQUE_VIOLATION = '23505'
/** A statement sent after the one that failed its transaction: it says nothing of its own. */
export const TRANSACTION_ABORTED = '25P02'

/**
 * SQLSTATE classes that mean "this data", not "this database": 22 data exception, 23 integrity, and
 * 54 program limit exceeded (a JSON value nested deeper than the server's stack, an index row too
 * large), which the same rows meet again on every retry.
 */
export function isDataError(error: unknown): boolean {
  const code = sqlState(error)
  return code !== undefined && (code.startsWith('22') || code.startsWith('23') || code.startsWith('54'))
}

/** Deadlock or serialization failure: the same commit may succeed if tried again. */
export const isRetryable = (error: unknown) => ['40001', '40P01'].includes(sqlState(error) ?? '')

/**
 * SQLSTATE classes that mean "this database, now", whatever the statement: 08 connection, 28 and 3D
 * the login or the database gone, 53 insufficient resources (disk full, out of memory), 55 a lock or
 * object not available, 57 operator intervention (shutdown, cancel), 58 system (I/O) error, F0
 * configuration, XX internal error. Retrying later is the client's right answer.
 */
const STORAGE_CLASSES = new Set(['08', '28', '3D', '53', '55', '57', '58', 'F0', 'XX'])
/**
 * The same of single SQLSTATEs in other classes, which the same rows meet whatever they hold and are
 * stored once the operator has put the database right: 25006, a database that takes no writes now (a
 * hot standby after a failover, a server set read-only); 42501, core's role no longer allowed to
 * write a table (privileges revoked, a migration run as another owner).
 */
const STORAGE_STATES = new Set(['25006', '42501'])

/**
 * Failures that may come of the session's own settings, which a database's or role's settings (ALTER
 * DATABASE / ROLE ... SET) give a session only as it starts: 25006 read-only (default_transaction_read_only),
 * 57014 statement_timeout, 55P03 lock_timeout. A session that met one is not used again: kept in the
 * pool, it would fail the same way after the operator put the setting right, until it closes.
 */
export const staleSession = (error: unknown) => ['25006', '57014', '55P03'].includes(sqlState(error) ?? '')

/** What the driver says of a statement it refused to send, before the database saw it. */
const DRIVER_STATEMENT_ERRORS = new Set(['MAX_PARAMETERS_EXCEEDED', 'UNDEFINED_VALUE'])

/**
 * Whose fault a failed commit is:
 * - `rows`: the database refused a value (isDataError); the request holding it gets 400.
 * - `statement`: a statement built from these rows failed on its own terms (an SQL error of another
 *   class, a driver refusing it, our own code throwing on a value); a fault of the service that the
 *   same rows meet again, so its request gets 500, and only it.
 * - `storage`: the database or the way to it (any other error: connections, timeouts, the SQLSTATE
 *   classes above, an error that ended the session); every request gets 503 and the writer fails fast
 *   for a while.
 */
export function faultOf(error: unknown): 'rows' | 'statement' | 'storage' {
  if (isDataError(error)) return 'rows'
  const code = sqlState(error)
  if (code !== undefined) {
    const storage = STORAGE_CLASSES.has(code.slice(0, 2)) || STORAGE_STATES.has(code) || isRetryable(error) || endsSession(error)
    return storage ? 'storage' : 'statement'
  }
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && DRIVER_STATEMENT_ERRORS.has(e.code)) return 'statement'
  }
  // Thrown by JavaScript itself on a value (a property of undefined, an invalid array length): the
  // drivers report their own troubles with errors of their own, carrying a code.
  const plain = error instanceof TypeError || error instanceof RangeError
  return plain && (error as { code?: unknown }).code === undefined ? 'statement' : 'storage'
}

/**
 * FATAL or PANIC: the server ended the session (an idle transaction's timeout, 25P03, among others),
 * which says nothing of the statement it came to, whatever its SQLSTATE.
 */
function endsSession(error: unknown): boolean {
  for (let e = error as { severity?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.severity === 'FATAL' || e.severity === 'PANIC') return true
  }
  return false
}

export function sqlState(error: unknown): string | undefined {
  // Drizzle wraps the driver's error; the SQLSTATE is on the cause, an error the database sent (with
  // a severity: a system error's code, such as EPIPE, may look like an SQLSTATE too).
  for (let e = error as { code?: unknown; severity?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && typeof e.severity === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e.code
  }
  return undefined
}
