import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './config'
import { DatabaseInUseError, errorMessage, openDatabase, type Database } from './db'
import { ApiError } from './errors'
import { KEY_PREFIX_LENGTH, keyPrefix } from './projects/keys'
import * as projects from './projects/service'

const USAGE = `usage: npm run -s admin -- <command> [flags] [--json]

  project create --name NAME [--monthly-limit N]
  project list
  project set-limit --project ID --monthly-limit N|unlimited
  key list --project ID
  key create --project ID --env ENV
  key rotate --project ID --env ENV
  key revoke --project ID --key-prefix PREFIX

The database is the one named by DATABASE_URL, else the embedded one under DATA_DIR (./data).`

/** Each command's usage line, by command: what its flags are is read from there. */
const USAGE_LINES = new Map(
  USAGE.split('\n')
    .filter((line) => /^  [a-z]/.test(line))
    .map((line) => [line.trim().split(' --')[0], line.trim()]),
)

class UsageError extends Error {}

/** A flag the command does not take is refused: `key rotate --key-prefix …` would replace every key of the environment. */
function checkFlags(command: string, flags: Flags): void {
  const taken = [...USAGE_LINES.get(command)!.matchAll(/--([a-z-]+)/g)].map(([, flag]) => flag)
  const stray = Object.keys(flags).filter((flag) => flag !== 'json' && flag !== 'help' && !taken.includes(flag))
  if (stray.length > 0) throw new UsageError(`"${command}" takes no ${stray.map((flag) => `--${flag}`).join(' or ')}`)
}

type Flags = Record<string, string | boolean | undefined>
type Command = (db: Database, flags: Flags) => Promise<{ result: unknown; text: string }>

const required = (flags: Flags, name: string): string => {
  const value = flags[name]
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
}

function monthlyLimit(flags: Flags, { optional }: { optional: boolean }): number | null {
  const raw = flags['monthly-limit']
  if (raw === undefined && optional) return null
  const text = required(flags, 'monthly-limit')
  if (text === 'unlimited' || text === 'none') return null
  if (!/^\d+$/.test(text)) throw new UsageError(`--monthly-limit takes a whole number of events or "unlimited" (got "${text}")`)
  return Number(text)
}

const when = (date: Date | null) => (date ? date.toISOString() : '-')

/** Anything shaped like a key (`sl_live_…`), as it may stand in a message that repeats what was typed. */
const KEY_LIKE = /\bsl_[a-z]+_[A-Za-z0-9_-]+/g

/**
 * A message with every key in it cut to its prefix, as "key list" shows keys. Errors repeat what was
 * typed ("no project …", "unknown command …"), and a key pasted in the wrong place (as the project,
 * or after a forgotten --key-prefix) was printed back whole, into the terminal's or CI's log.
 */
const withoutKeys = (message: string) => message.replace(KEY_LIKE, (key) => (key.length > KEY_PREFIX_LENGTH ? `${keyPrefix(key)}…` : key))

const COMMANDS: Record<string, Command> = {
  async 'project create'(db, flags) {
    const project = await projects.createProject(db.orm, { name: required(flags, 'name'), monthlyLimit: monthlyLimit(flags, { optional: true }) })
    const result = { projectId: project.projectId, name: project.name, monthlyLimit: project.monthlyLimit, keys: project.keys }
    const keys = Object.entries(project.keys).map(([env, key]) => `  ${env.padEnd(12)} ${key}`)
    return { result, text: [`project ${project.projectId} (${project.name}); keys, shown this once:`, ...keys].join('\n') }
  },
  async 'project list'(db) {
    const list = await projects.listProjects(db)
    const result = list.map((p) => ({ projectId: p.projectId, name: p.name, monthlyLimit: p.monthlyLimit, environments: p.environments, createdAt: p.createdAt }))
    const text = list.map((p) => `${p.projectId}  ${p.name}  limit=${p.monthlyLimit ?? 'unlimited'}  envs=${p.environments.join(',')}`).join('\n')
    return { result, text: text || 'no projects' }
  },
  async 'project set-limit'(db, flags) {
    const result = await projects.setMonthlyLimit(db, required(flags, 'project'), monthlyLimit(flags, { optional: false }))
    return { result, text: `project ${result.projectId}: monthly limit ${result.monthlyLimit ?? 'unlimited'}` }
  },
  async 'key list'(db, flags) {
    const keys = await projects.listKeys(db, required(flags, 'project'))
    const text = keys.map((k) => `${k.keyPrefix}…  ${k.environment.padEnd(12)} ${k.active ? 'active ' : 'revoked'}  created ${when(k.createdAt)}  revoked ${when(k.revokedAt)}`)
    return { result: keys, text: text.join('\n') || 'no keys' }
  },
  async 'key create'(db, flags) {
    const result = await projects.createKey(db, required(flags, 'project'), required(flags, 'env'))
    return { result, text: `new ${result.environment} key, shown this once: ${result.key}` }
  },
  async 'key rotate'(db, flags) {
    const result = await projects.rotateKey(db, required(flags, 'project'), required(flags, 'env'))
    return { result, text: `new ${result.environment} key, shown this once: ${result.key}\nrevoked: ${result.revoked.join(', ') || 'none'}` }
  },
  async 'key revoke'(db, flags) {
    const result = await projects.revokeKey(db, required(flags, 'project'), required(flags, 'key-prefix'))
    return { result, text: `revoked: ${result.revoked.join(', ')}` }
  },
}

export async function runCli(argv: string[], env = process.env): Promise<number> {
  let json = argv.includes('--json')
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        name: { type: 'string' },
        project: { type: 'string' },
        env: { type: 'string' },
        'monthly-limit': { type: 'string' },
        'key-prefix': { type: 'string' },
      },
    })
    json = values.json === true
    const name = positionals.join(' ')
    if (values.help && USAGE_LINES.has(name)) {
      process.stdout.write(`usage: npm run -s admin -- ${USAGE_LINES.get(name)} [--json]\n`)
      return 0
    }
    if (values.help) {
      process.stdout.write(`${USAGE}\n`)
      return 0
    }
    // An error like any other not understood: a script that passed --json gets JSON on stderr, not the
    // usage text on stdout, where it would take it for a command's answer.
    if (positionals.length === 0) throw new UsageError('name a command')
    const command = COMMANDS[name]
    if (!command) throw new UsageError(`unknown command "${name}"`)
    checkFlags(name, values)
    const config = loadConfig(env)
    const db = await openDatabase(config)
    try {
      await db.migrate()
      const { result, text } = await command(db, values)
      process.stdout.write(`${json ? JSON.stringify(result) : text}\n`)
      return 0
    } finally {
      await db.close()
    }
  } catch (error) {
    const known = error instanceof UsageError || error instanceof ApiError || error instanceof ConfigError || error instanceof DatabaseInUseError
    const isUsage = error instanceof UsageError || (error as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')
    // One line, never a stack trace: the database's own message says enough (and holds no password),
    // not the statement Drizzle wraps it in ("Failed query: …" and its parameters, on lines of their own).
    const message = withoutKeys(known || isUsage ? (error as Error).message : errorMessage(error))
    const code = error instanceof ApiError ? error.code : isUsage ? 'usage' : 'error'
    process.stderr.write(json ? `${JSON.stringify({ error: { code, message } })}\n` : `error: ${message}${isUsage ? `\n\n${USAGE}` : ''}\n`)
    return isUsage ? 2 : 1
  }
}

if (import.meta.main) process.exit(await runCli(process.argv.slice(2)))
