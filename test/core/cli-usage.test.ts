import { expect, test } from 'bun:test'
import { runAdmin } from '../helpers/process'

// Usage errors reach no database: an unreachable DATABASE_URL proves it, and spares the setup.
const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none' }

test('no command with --json: a JSON usage error on stderr and exit 2, as for any command not understood', async () => {
  const { exitCode, stdout, stderr } = await runAdmin(['--json'], env)
  expect(exitCode).toBe(2)
  expect(stdout).toBe('')
  expect(JSON.parse(stderr)).toEqual({ error: { code: 'usage', message: 'name a command' } })
})

test('no command: the error and the usage on stderr, exit 2; --help alone prints the usage on stdout, exit 0', async () => {
  const none = await runAdmin([], env)
  expect(none.exitCode).toBe(2)
  expect(none.stdout).toBe('')
  expect(none.stderr).toStartWith('error: name a command\n\nusage: npm run -s admin -- <command>')
  const help = await runAdmin(['--help'], env)
  expect(help.exitCode).toBe(0)
  expect(help.stdout).toStartWith('usage: npm run -s admin -- <command>')
})
