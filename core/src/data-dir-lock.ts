import { closeSync, ftruncateSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { dlopen, FFIType } from 'bun:ffi'

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
  if (!locked) {
    const holder = readFileSync(lockFile, 'utf8').trim().split(' ')[0]
    closeSync(fd)
    throw inUse(dataDir, holder)
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

let flock: ((fd: number, operation: number) => number) | null | undefined

/** An exclusive `flock` without waiting: true when taken, false when held elsewhere, undefined where there is none. */
function tryLock(fd: number): boolean | undefined {
  flock ??= loadFlock()
  return flock ? flock(fd, LOCK_EX | LOCK_NB) === 0 : undefined
}

function loadFlock() {
  for (const library of C_LIBRARIES) {
    try {
      return dlopen(library, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } }).symbols.flock
    } catch {
      // Not this system's C library.
    }
  }
  return null
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
