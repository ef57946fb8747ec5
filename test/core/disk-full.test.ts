import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { openEmbeddedDatabase } from '@sightline/core/db'
import { engine, migratedSnapshot } from '../helpers/database'
import { spawnCore, type CoreProcess } from '../helpers/process'

// "200 means stored" on a disk that fills up, embedded: core in its own process on a small file
// system of its own (a tmpfs, so the test needs the right to mount one and skips itself without it).
// PGlite spins for ever, the process with it, once it fails to create a write-ahead log segment: core
// must answer 503 storage_unavailable before that, stay up, and store again once space is freed.

const mountPoint = mkdtempSync(join(tmpdir(), 'sightline-disk-full-'))
// The embedded database whichever engine the suite runs on: once is enough.
const mounted = engine === 'embedded' && Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', mountPoint], { stderr: 'pipe' }).exitCode === 0

let core: CoreProcess | undefined
afterAll(async () => {
  // A wedged core answers no SIGTERM.
  if (core && core.proc.exitCode === null) {
    core.proc.kill('SIGKILL')
    await core.proc.exited
  }
  if (mounted) Bun.spawnSync(['umount', mountPoint])
  rmSync(mountPoint, { recursive: true, force: true })
})

const freeBytes = (dir: string) => {
  const { bavail, bsize } = statfsSync(dir)
  return Number(bavail) * Number(bsize)
}

/** A replay chunk of some 500 KB that compresses little: random text. */
function chunk(n: number) {
  const events = Array.from({ length: 10 }, (_, j) => ({
    type: 3,
    timestamp: 1_700_000_000_000 + n * 100 + j,
    data: { source: 0, text: Buffer.from(crypto.getRandomValues(new Uint8Array(36_000))).toString('base64') },
  }))
  return { sessionId: `full-${n}`, windowId: 'w', seq: 0, events }
}

async function post(url: string, key: string, body: object) {
  try {
    const res = await fetch(`${url}/api/ingestion/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    })
    const answer = (await res.json()) as { error?: { code: string } }
    return { status: res.status as number | null, code: answer.error?.code, retryAfter: res.headers.get('retry-after') }
  } catch {
    return { status: null, code: undefined, retryAfter: null }
  }
}

describe.skipIf(!mounted)('embedded database on a file system that fills up', () => {
  test('answers 503 with Retry-After, stays up, stores again once space is freed, and loses nothing it acknowledged', async () => {
    const dataDir = join(mountPoint, 'data')
    mkdirSync(dataDir)
    await (await PGlite.create(join(dataDir, 'pglite'), { loadDataDir: await migratedSnapshot() })).close()
    core = await spawnCore({ DATA_DIR: dataDir })
    const key = core.output().match(/shown this once: +(sl_dev_\S+)/)![1]
    const acknowledged: string[] = []
    const answers: Awaited<ReturnType<typeof post>>[] = []
    const send = async (n: number) => {
      const body = chunk(n)
      const answer = await post(core!.url, key, body)
      answers.push(answer)
      if (answer.status === 200) acknowledged.push(body.sessionId)
      return answer
    }
    for (let n = 0; n < 3; n++) expect((await send(n)).status).toBe(200)
    // Less room left than the reserve, and more than the log has left of its segment: the segment
    // after it cannot be created (16 MB), and the pages written meanwhile still fit.
    const filler = join(mountPoint, 'filler')
    writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(mountPoint) - 20 * 1024 * 1024)))
    for (let n = 3; n < 200 && answers.filter((a) => a.status !== 200).length < 5; n++) {
      const { status } = await send(n)
      if (status === null) break
      // Past the writer's second of failing fast: each refusal is a commit tried.
      if (status !== 200) await Bun.sleep(1_100)
    }
    const refused = answers.filter((a) => a.status !== 200)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.filter((a) => a.status !== 503 || a.code !== 'storage_unavailable' || a.retryAfter === null)).toEqual([])
    expect((await fetch(`${core.url}/health/simple`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200)
    const health = await fetch(`${core.url}/health`, { signal: AbortSignal.timeout(5_000) })
    expect(health.status).toBe(503)
    expect(((await health.json()) as { checks: { database: { writable: boolean } } }).checks.database.writable).toBe(false)

    rmSync(filler)
    let again = await send(1000)
    for (let tries = 0; again.status === 503 && tries < 10; tries++) {
      await Bun.sleep(500)
      again = await send(1001 + tries)
    }
    expect(again.status).toBe(200)
    expect((await fetch(`${core.url}/health`)).status).toBe(200)

    core.proc.kill('SIGTERM')
    expect(await core.proc.exited).toBe(0)
    const db = await openEmbeddedDatabase(dataDir)
    try {
      const rows = await db.rows<{ session_id: string; n: number }>(sql`select session_id, count(*)::int as n from replay_chunks group by session_id`)
      const stored = new Map(rows.map((r) => [r.session_id, r.n]))
      expect(acknowledged.filter((id) => stored.get(id) !== 1)).toEqual([])
    } finally {
      await db.close()
    }
  }, 120_000)
})
