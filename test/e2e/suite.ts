import { afterAll, beforeAll } from 'bun:test'
import { join } from 'node:path'
import { memoryLogger } from '../helpers/core'
import { builtTracker } from '../tracker/helpers/build'
import { startE2eCore, type E2eCore } from '../tracker/helpers/e2e'

/**
 * What every browser test file starts from: one core on a real database, with its request log kept,
 * and the tracker as `npm run build` makes it. `e2e` and `script` are there once `beforeAll` ran.
 */
export function e2eSuite() {
  const suite = { coreLog: memoryLogger('info'), e2e: undefined as unknown as E2eCore, script: '' }
  beforeAll(async () => {
    // The relay runs on loopback: core believes its X-Forwarded-For, as an operator would configure it.
    suite.e2e = await startE2eCore({ log: suite.coreLog.log, env: { TRUSTED_PROXIES: '127.0.0.1' } })
    suite.script = join(await builtTracker(), 't.js')
  }, 60_000)
  afterAll(() => suite.e2e.close())
  return suite
}
