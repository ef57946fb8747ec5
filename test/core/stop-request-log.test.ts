import { afterAll, describe, expect, test } from 'bun:test'
import { spawnCore, tricklingRequest } from '../helpers/process'
import { ownDatabases, welcomeKeyOf } from '../helpers/own-databases'

// What the request log says of a request the stop cut off: its client got no answer (the connection
// closed), so no status is logged as though one had been sent.

const own = ownDatabases('sightline-stop-log-')
afterAll(() => own.close())

describe('the request log at a stop', () => {
  test('a request cut off by the grace period is logged as cut off, not with a status its client never saw', async () => {
    const core = await spawnCore(await own.env())
    const slow = await tricklingRequest(core, welcomeKeyOf(core))
    try {
      // A client that sent a bad body whole got its 400, and the log says so.
      const bad = await fetch(`${core.url}/api/ingestion/logs`, { method: 'POST', headers: { authorization: `Bearer ${welcomeKeyOf(core)}` }, body: '{' })
      expect(bad.status).toBe(400)
      await Bun.sleep(200)
      core.proc.kill('SIGTERM')
      expect(await Promise.race([core.proc.exited, Bun.sleep(20_000).then(() => null)])).toBe(0)
      expect(slow.answer()).toBe('')
      const lines = core
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"msg":"request"') && line.includes('/api/ingestion/customEvent'))
        .map((line) => JSON.parse(line))
      expect(lines).toHaveLength(1)
      const answered = core.stdout().split('\n').filter((line) => line.includes('"path":"/api/ingestion/logs"')).map((line) => JSON.parse(line))
      expect(answered).toMatchObject([{ status: 400 }])
      expect(answered[0].unanswered).toBeUndefined()
      expect(lines[0].status).toBeUndefined()
      expect(lines[0].unanswered).toBe(true)
    } finally {
      slow.end()
      core.proc.kill('SIGKILL')
    }
  }, 30_000)
})
