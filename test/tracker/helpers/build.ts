import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTracker } from '../../../tracker/build'

let built: Promise<string> | undefined

/** `npm run build` of the tracker, once per test run, into a directory of its own. */
export function builtTracker(): Promise<string> {
  built ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sightline-tracker-'))
    await buildTracker(dir)
    return dir
  })()
  return built
}
