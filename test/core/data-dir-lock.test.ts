import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { constants, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseInUseError, lockDataDir, lockFailure } from '@sightline/core/data-dir-lock'

const dir = mkdtempSync(join(tmpdir(), 'sightline-lock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const lockFile = join(dir, 'sightline.lock')

describe('the data directory lock', () => {
  test('held by another open file, it says the database is in use, by the pid its file names', () => {
    // flock locks belong to an open file: a second open in this same process is refused as another process's would be.
    const release = lockDataDir(dir)
    try {
      expect(() => lockDataDir(dir)).toThrow(new DatabaseInUseError(`the embedded database in ${dir} is in use by process ${process.pid}; stop it first, or set DATABASE_URL to share a Postgres server`))
    } finally {
      release()
    }
    lockDataDir(dir)()
  })

  test('"would block" alone means in use', () => {
    for (const errno of [constants.errno.EWOULDBLOCK, constants.errno.EAGAIN]) {
      const error = lockFailure(errno, lockFile, dir, () => '4242')
      expect(error).toBeInstanceOf(DatabaseInUseError)
      expect(error.message).toContain('is in use by process 4242')
    }
  })

  test('a file system without locks (ENOLCK, EOPNOTSUPP) is named as such, not taken for a database in use', () => {
    for (const [errno, name] of [
      [constants.errno.ENOLCK, 'ENOLCK'],
      [constants.errno.EOPNOTSUPP, 'EOPNOTSUPP'],
    ] as const) {
      const error = lockFailure(errno, lockFile, dir, () => '4242')
      expect(error).not.toBeInstanceOf(DatabaseInUseError)
      expect(error.message).not.toContain('in use')
      expect(error.message).toStartWith(`cannot lock ${lockFile}: flock failed with `)
      expect(error.message.split(';')[0]).toContain(name)
      expect(error.message).toContain("DATA_DIR's file system does not support file locks")
      expect(error.message).toContain('Put DATA_DIR on a local file system, or set DATABASE_URL')
    }
  })

  test('any other failure names its error', () => {
    const error = lockFailure(constants.errno.EBADF, lockFile, dir, () => '4242')
    expect(error).not.toBeInstanceOf(DatabaseInUseError)
    expect(error.message).toStartWith(`cannot lock ${lockFile}: flock failed with EBADF; without the lock nothing keeps a second process`)
  })
})
