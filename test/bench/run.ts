import { existsSync } from 'node:fs'
import { join } from 'node:path'

/**
 * `npm run bench [-- <suite> [args]]`: measures, never asserts. A suite is a file beside this one
 * (`core.ts`, `relay.ts`) exporting `main(args)`; it starts what it needs, runs every measurement
 * several times against its baseline in the same run, and prints a Markdown table of medians.
 */
const [name = 'core', ...args] = process.argv.slice(2)
const file = join(import.meta.dir, `${name}.ts`)
if (!/^[a-z-]+$/.test(name) || name === 'run' || !existsSync(file)) {
  console.error(`unknown bench suite "${name}"`)
  process.exit(2)
}
const suite: { main(args: string[]): Promise<void> } = await import(file)
await suite.main(args)
process.exit(0)
