import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ServiceTracker } from '../tracker/src/index'
import { createTestDatabase, engine, type TestDatabase } from './helpers/database'
import { ROOT, runAdmin } from './helpers/process'

// The README against the code it describes, where the two can be compared mechanically: the admin
// commands and their JSON, the standalone relay's flags, the tracker's API, options and script tag,
// and the README's own links. (The configuration table is checked in test/core/config.test.ts, the
// relay recipes in test/relay/readme.test.ts.)
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')

/** The text of a section, from its heading to the next heading of the same or a higher level. */
function section(heading: string): string {
  const level = heading.match(/^#+/)![0].length
  const start = readme.indexOf(`\n${heading}\n`)
  expect(start, heading).toBeGreaterThan(-1)
  const rest = readme.slice(start + heading.length + 2)
  const end = rest.search(new RegExp(`^#{1,${level}} `, 'm'))
  return end === -1 ? rest : rest.slice(0, end)
}

describe("README's admin commands", () => {
  let database: TestDatabase | undefined
  let dataDir: string | undefined
  let env: Record<string, string>
  beforeAll(async () => {
    if (engine === 'postgres') {
      database = await createTestDatabase()
      env = { DATABASE_URL: database.url! }
    } else {
      dataDir = mkdtempSync(join(tmpdir(), 'sightline-readme-admin-'))
      env = { DATA_DIR: dataDir }
    }
  })
  afterAll(async () => {
    await database?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  const admin = async (...args: string[]) => {
    const { exitCode, stdout, stderr } = await runAdmin([...args, '--json'], env)
    expect(exitCode, `${args.join(' ')}: ${stderr}`).toBe(0)
    return JSON.parse(stdout)
  }

  test('show every command the usage lists, with its flags', async () => {
    const { exitCode, stdout } = await runAdmin(['--help'], env)
    expect(exitCode).toBe(0)
    const usage = stdout.split('\n').filter((line) => /^ {2}[a-z]/.test(line)).map((line) => line.trim())
    const shown = section('## Admin commands').match(/^npm run -s admin -- .*$/gm)!.map((line) => line.replace('npm run -s admin -- ', ''))
    expect(shown.map((line) => line.split(' --')[0])).toEqual(usage.map((line) => line.split(' --')[0]))
    for (const line of usage) {
      const flags = line.match(/--[a-z-]+/g) ?? []
      const example = shown.find((candidate) => candidate.split(' --')[0] === line.split(' --')[0])!
      expect(example.match(/--[a-z-]+/g) ?? [], line).toEqual(flags)
    }
  })

  test("document each command's JSON as it prints it", async () => {
    const documented = new Map(
      [...section('## Admin commands').matchAll(/^\| `([a-z -]+)` \| `(\[?\{[^`]*\}\]?)`/gm)].map(([, command, shape]) => [command, shape]),
    )
    /** The member names a documented shape lists at its top level (`{a, b: {c}}`: a, b). */
    const members = (shape: string) => {
      const inner = shape.replace(/^\[?\{/, '').replace(/\}\]?$/, '')
      return inner.replace(/\{[^}]*\}/g, '').split(',').map((member) => member.split(':')[0].trim()).sort()
    }
    const keys = (value: object) => Object.keys(value).sort()

    const created = await admin('project', 'create', '--name', 'shop')
    const { projectId } = created
    const key = await admin('key', 'create', '--project', projectId, '--env', 'staging')
    const printed: Record<string, object> = {
      'project create': created,
      'project list': (await admin('project', 'list'))[0],
      'project set-limit': await admin('project', 'set-limit', '--project', projectId, '--monthly-limit', '10'),
      'key create': key,
      'key rotate': await admin('key', 'rotate', '--project', projectId, '--env', 'staging'),
      'key list': (await admin('key', 'list', '--project', projectId))[0],
      'key revoke': await admin('key', 'revoke', '--project', projectId, '--key-prefix', created.keys.production.slice(0, 16)),
    }
    expect([...documented.keys()].sort()).toEqual(Object.keys(printed).sort())
    for (const [command, value] of Object.entries(printed)) expect(members(documented.get(command)!), command).toEqual(keys(value))
    expect(documented.get('project create')).toContain(`keys: {${keys(created.keys).reverse().join(', ')}}`)
  })
})

test("README's standalone relay names every flag of its usage", async () => {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'relay/src/main.ts'), '--help'], { stdout: 'pipe', stderr: 'pipe' })
  const [usage, exitCode] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
  expect(exitCode).toBe(0)
  const flags = usage.match(/--[a-z-]+/g)!
  expect(flags.length).toBeGreaterThan(5)
  const text = section('### Standalone')
  for (const flag of flags) expect(text, flag).toMatch(new RegExp(`${flag}(?![a-z-])`))
})

describe("README's tracker", () => {
  test('API names every public method', () => {
    const api = section('### API')
    const methods = Object.getOwnPropertyNames(ServiceTracker.prototype).filter((name) => name !== 'constructor')
    expect(methods.length).toBeGreaterThan(20)
    expect(api).toContain('`ServiceTracker.init(')
    for (const method of methods) expect(api, method).toMatch(new RegExp(`\`${method}\\(`))
  })

  test('Options names every option of TrackerOptions', () => {
    const types = readFileSync(join(ROOT, 'tracker/src/types.ts'), 'utf8')
    const body = types.match(/export interface TrackerOptions \{([\s\S]*?)\n\}/)![1]
    const options = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map(([, name]) => name)
    const table = [...section('### Options').matchAll(/^\| `(\w+)` \|/gm)].map(([, name]) => name)
    expect(table.sort()).toEqual(options.sort())
  })

  test("'On a page' names every data attribute the script tag reads", () => {
    const browser = readFileSync(join(ROOT, 'tracker/src/browser.ts'), 'utf8')
    const read = browser.match(/const \{ ([^}]+) \} = [^\n]*\.dataset/)![1].split(',').map((name) => name.trim())
    expect(read.length).toBeGreaterThan(0)
    const page = section('### On a page')
    for (const name of read) expect(page, name).toContain(`data-${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`)
  })
})

test("every link to a heading of the README finds one (GitHub's anchors)", () => {
  const prose = readme.replace(/^```[\s\S]*?^```/gm, '')
  const anchors = new Set(
    [...prose.matchAll(/^#{1,6} (.+)$/gm)].map(([, title]) =>
      title
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replaceAll(' ', '-'),
    ),
  )
  const links = [...prose.matchAll(/\]\(#([^)]+)\)/g)].map(([, anchor]) => anchor)
  expect(links.length).toBeGreaterThan(0)
  expect(links.filter((anchor) => !anchors.has(anchor))).toEqual([])
})
