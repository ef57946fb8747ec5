import { closeSync, ftruncateSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { constants } from 'node:os'
import { join } from 'node:path'
import { dlopen, FFIType, read, type Pointer } from 'bun:ffi'

export class DatabaseInUseError extends Error {}

const inUse = (dataDir: string, holder: string) =>
  new DatabaseInUseError(
    `the embedded database in ${dataDir} is in use by ${holder ? `process ${holder}` : 'another process'}; stop it first, or set DATABASE_URL to share a Postgres server`,
  )

/**
 * PGlite is a single-process database: two processes writing one data directory would corrupt it.
 * The first to open it holds an exclusive `flock` on `sightline.lock` for as long as it runs; any
 * other is refused. The kernel drops the lock when its process ends, however it ends (killed,
 * crashed), so nothing stale is ever left to weigh, and it holds for every process that reaches the
 * file whatever its pid namespace: two containers mounting one volume, where a pid in the file
 * means nothing to the other (each may well be pid 1), still see each other's lock. The file says
 * which pid holds it, for the message. Where the system has no `flock` (Windows), a pid file is
 * the lock instead (see lockByPidFile).
 */
export function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, 'sightline.lock')
  // Opened without truncating: until the lock is ours, what the file says is its holder's.
  const fd = openSync(lockFile, 'a+')
  const locked = tryLock(fd)
  if (locked === undefined) {
    closeSync(fd)
    return lockByPidFile(lockFile, dataDir)
  }
  if (locked !== true) {
    const holder = () => readFileSync(lockFile, 'utf8').trim().split(' ')[0]
    try {
      throw lockFailure(locked.errno, lockFile, dataDir, holder)
    } finally {
      closeSync(fd)
    }
  }
  ftruncateSync(fd, 0)
  writeSync(fd, String(process.pid))
  // The file stays: removed, a process that opened it just before could lock it while a third
  // creates and locks a new one.
  return () => closeSync(fd)
}

const LOCK_EX = 2
const LOCK_NB = 4

/** Where the C library is: glibc, musl (Alpine) and macOS name it differently. */
const C_LIBRARIES = process.platform === 'darwin' ? ['libc.dylib'] : ['libc.so.6', `libc.musl-${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}.so.1`]

interface Flock {
  flock(fd: number, operation: number): number
  /** The calling thread's errno, where the C library says where it is (glibc and musl, macOS). */
  errno?(): number
}

let c: Flock | null | undefined

/**
 * An exclusive `flock` without waiting: true when taken, else why not (its errno, undefined where it
 * cannot be read); undefined where there is no `flock`.
 */
function tryLock(fd: number): true | { errno: number | undefined } | undefined {
  c ??= loadFlock()
  if (!c) return undefined
  for (;;) {
    if (c.flock(fd, LOCK_EX | LOCK_NB) === 0) return true
    // Read at once, before anything else this thread runs may set it again.
    const errno = c.errno?.()
    if (errno !== constants.errno.EINTR) return { errno }
  }
}

function loadFlock(): Flock | null {
  const errnoAt = process.platform === 'darwin' ? '__error' : '__errno_location'
  for (const library of C_LIBRARIES) {
    let flock: Flock['flock']
    try {
      flock = dlopen(library, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } }).symbols.flock
    } catch {
      // Not this system's C library.
      continue
    }
    try {
      const where = dlopen(library, { [errnoAt]: { args: [], returns: FFIType.ptr } }).symbols[errnoAt] as () => Pointer
      return { flock, errno: () => read.i32(where(), 0) }
    } catch {
      return { flock }
    }
  }
  return null
}

/** The errno values of a file system that takes no file locks: NFS without its lock service, some FUSE and SMB mounts. */
const NO_LOCKS = new Set([constants.errno.ENOLCK, constants.errno.ENOTSUP, constants.errno.EOPNOTSUPP])

/** All its names: some are aliases on some systems (ENOTSUP and EOPNOTSUPP on Linux). */
const errnoName = (errno: number) =>
  Object.entries(constants.errno)
    .filter(([, value]) => value === errno)
    .map(([name]) => name)
    .join('/') || `errno ${errno}`

/**
 * Why `flock` on `lockFile` failed, as an error to stop on. Only "would block" means another process
 * holds the lock (`holder` says which, from the file). Any other failure leaves the directory unlocked,
 * and starting anyway would risk the very corruption the lock is for: DATA_DIR on a shared network
 * file system is where a second core (another host, another container) is likeliest to open it. So it
 * is refused too, naming the error and what to do, not taken for a database in use. An errno that
 * could not be read is taken as "would block", by far the likeliest.
 */
export function lockFailure(errno: number | undefined, lockFile: string, dataDir: string, holder: () => string): Error {
  if (errno === undefined || errno === constants.errno.EWOULDBLOCK || errno === constants.errno.EAGAIN) return inUse(dataDir, holder())
  const unsupported = NO_LOCKS.has(errno)
    ? `DATA_DIR's file system does not support file locks (as some network file systems do not), and without a lock nothing keeps a second process from opening the embedded database at once, which would corrupt it`
    : 'without the lock nothing keeps a second process from opening the embedded database at once, which would corrupt it'
  return new Error(
    `cannot lock ${lockFile}: flock failed with ${errnoName(errno)}; ${unsupported}. Put DATA_DIR on a local file system, or set DATABASE_URL to use a Postgres server`,
  )
}

/**
 * Without `flock`, a pid file turns the mistake into a clear error; the file of a process that died
 * is taken over. The system reuses pids, and a restarted container numbers its processes alike, so
 * the pid of a dead core may well be alive: the file also records when its process started, and a
 * live process that started at another time is not its owner.
 */
function lockByPidFile(lockFile: string, dataDir: string): () => void {
  const owner = `${process.pid} ${processStartTime(process.pid) ?? ''}`.trim()
  try {
    writeFileSync(lockFile, owner, { flag: 'wx' })
  } catch (error) {
    // Only a lock file already there is another owner's to weigh; anything else (no permission) is the answer.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    const [pid, startTime] = readFileSync(lockFile, 'utf8').trim().split(' ')
    const holder = Number(pid)
    if (holder !== process.pid && isAlive(holder) && (!startTime || (processStartTime(holder) ?? startTime) === startTime)) {
      throw inUse(dataDir, String(holder))
    }
    writeFileSync(lockFile, owner)
  }
  return () => rmSync(lockFile, { force: true })
}

/** When a process started, in clock ticks since boot (Linux's /proc); undefined where unknown. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces; the 22nd is the start time.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || undefined
  } catch {
    return undefined
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
