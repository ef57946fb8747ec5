import type { Database, Orm } from '../db'
import { ApiError } from '../errors'
import { DEFAULT_ENVIRONMENTS, generateKey, hashKey, isValidEnvironmentName, isWellFormedKey, KEY_PREFIX_LENGTH, keyPrefix } from './keys'
import * as store from './store'

/** Every core process LISTENs here and drops cached keys when a key is created, rotated or revoked. */
export const KEYS_CHANNEL = 'sightline_keys'

export interface CreatedProject {
  projectId: string
  name: string
  monthlyLimit: number | null
  keys: Record<string, string>
}

/**
 * Tells every core process to drop its cached keys. Sent inside the change's transaction, Postgres
 * delivers it when (and only if) the change commits: a command stopped right after the commit cannot
 * leave a revoked key cached for a minute.
 */
const announceKeyChange = (tx: Orm, projectId: string) => store.notify(tx, KEYS_CHANNEL, projectId)

async function issueKey(orm: Orm, projectId: string, environment: string): Promise<string> {
  const key = generateKey(environment)
  await store.insertKey(orm, { projectId, environment, keyHash: hashKey(key), keyPrefix: keyPrefix(key) })
  return key
}

async function requireProject(orm: Orm, projectId: string) {
  const project = isUuid(projectId) ? await store.findProject(orm, projectId) : undefined
  if (!project) throw new ApiError('not_found', `no project ${projectId}`)
  return project
}

/** Rotation replaces the keys of an environment that exists: a mistyped name must not pass for a rotation. */
async function requireEnvironment(orm: Orm, projectId: string, environment: string): Promise<void> {
  const environments = await store.listEnvironments(orm, projectId)
  if (!environments.includes(environment)) {
    throw new ApiError('not_found', `project ${projectId} has no environment "${environment}" (it has ${environments.join(', ') || 'none'}); "key create" starts a new one`)
  }
}

function requireEnvironmentName(name: string): void {
  if (!isValidEnvironmentName(name)) {
    throw new ApiError('validation_failed', `environment names are 1-32 of a-z, 0-9, _ and -, starting with a letter (got "${name}")`)
  }
}

function requireMonthlyLimit(limit: number | null): void {
  if (limit !== null && !(Number.isSafeInteger(limit) && limit >= 0)) {
    throw new ApiError('validation_failed', `the monthly limit is a whole number of events up to ${Number.MAX_SAFE_INTEGER}, or none (unlimited)`)
  }
}

export async function createProject(
  orm: Orm,
  input: { name: string; monthlyLimit?: number | null; environments?: readonly string[] },
): Promise<CreatedProject> {
  const monthlyLimit = input.monthlyLimit ?? null
  const environmentNames = input.environments ?? DEFAULT_ENVIRONMENTS
  if (!input.name.trim()) throw new ApiError('validation_failed', 'a project needs a name')
  requireMonthlyLimit(monthlyLimit)
  environmentNames.forEach(requireEnvironmentName)
  return orm.transaction(async (tx) => {
    const projectId = await store.insertProject(tx, input.name.trim(), monthlyLimit)
    const keys: Record<string, string> = {}
    for (const environment of environmentNames) {
      await store.insertEnvironment(tx, projectId, environment)
      keys[environment] = await issueKey(tx, projectId, environment)
    }
    return { projectId, name: input.name.trim(), monthlyLimit, keys }
  })
}

/** On a database with no project yet, creates `default` so a new user can send data at once. */
export async function ensureDefaultProject(orm: Orm): Promise<CreatedProject | null> {
  if ((await store.countProjects(orm)) > 0) return null
  return createProject(orm, { name: 'default' })
}

export async function listProjects(db: Database) {
  const projects = await store.listProjects(db.orm)
  return Promise.all(projects.map(async (p) => ({ ...p, environments: await store.listEnvironments(db.orm, p.projectId) })))
}

export async function setMonthlyLimit(db: Database, projectId: string, monthlyLimit: number | null) {
  requireMonthlyLimit(monthlyLimit)
  await requireProject(db.orm, projectId)
  await db.orm.transaction(async (tx) => {
    await store.updateMonthlyLimit(tx, projectId, monthlyLimit)
    await announceKeyChange(tx, projectId)
  })
  return { projectId, monthlyLimit }
}

export async function listKeys(db: Database, projectId: string) {
  await requireProject(db.orm, projectId)
  return (await store.listKeys(db.orm, projectId)).map((k) => ({ ...k, active: k.revokedAt === null }))
}

/** A further key for an environment (created if new); existing keys stay valid. */
export async function createKey(db: Database, projectId: string, environment: string) {
  requireEnvironmentName(environment)
  await requireProject(db.orm, projectId)
  const key = await db.orm.transaction(async (tx) => {
    await store.insertEnvironment(tx, projectId, environment)
    await announceKeyChange(tx, projectId)
    return issueKey(tx, projectId, environment)
  })
  return { projectId, environment, key, keyPrefix: keyPrefix(key) }
}

/** A new key for the environment; every older key of it stops working at once, on every process. */
export async function rotateKey(db: Database, projectId: string, environment: string) {
  requireEnvironmentName(environment)
  await requireProject(db.orm, projectId)
  await requireEnvironment(db.orm, projectId, environment)
  const { key, revoked } = await db.orm.transaction(async (tx) => {
    const revoked = await store.revokeKeys(tx, projectId, { environment })
    await announceKeyChange(tx, projectId)
    return { key: await issueKey(tx, projectId, environment), revoked }
  })
  return { projectId, environment, key, keyPrefix: keyPrefix(key), revoked: revoked.map((k) => k.keyPrefix) }
}

/**
 * Revokes one key, named by the start of its prefix or by the whole key: a key found leaked is
 * pasted as it was found, and only its first KEY_PREFIX_LENGTH characters are stored beside the hash.
 */
export async function revokeKey(db: Database, projectId: string, prefix: string) {
  await requireProject(db.orm, projectId)
  if (prefix.length < 6) throw new ApiError('validation_failed', 'give at least 6 characters of the key prefix')
  const wholeKey = prefix.length > KEY_PREFIX_LENGTH
  if (wholeKey && !isWellFormedKey(prefix)) {
    throw new ApiError('validation_failed', `a key prefix is at most ${KEY_PREFIX_LENGTH} characters, as "key list" shows it; or give the whole key`)
  }
  // Errors name the key by its prefix, as everywhere else: a whole key is not printed again.
  const shown = keyPrefix(prefix)
  // One key: every key of an environment starts alike (`sl_live_`), so a short prefix would take all
  // of them, and the environment's ingestion with them. Rotation is the way to replace them all.
  const revoked = await db.orm.transaction(async (tx) => {
    const matched = await store.revokeKeys(tx, projectId, wholeKey ? { keyHash: hashKey(prefix) } : { prefix })
    if (matched.length > 1) {
      const prefixes = matched.map((k) => k.keyPrefix).join(', ')
      throw new ApiError('validation_failed', `${shown} begins ${matched.length} active keys (${prefixes}); give enough of the prefix to name one`)
    }
    await announceKeyChange(tx, projectId)
    return matched
  })
  if (revoked.length === 0) throw new ApiError('not_found', `no active key starting with ${shown} in project ${projectId}`)
  return { projectId, revoked: revoked.map((k) => k.keyPrefix) }
}

const isUuid = (text: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text)
