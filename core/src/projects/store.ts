import { and, asc, count, eq, isNull, like, sql } from 'drizzle-orm'
import { apiKeys, environments, projects } from '@sightline/schema'
import type { Orm } from '../db'

/** Who a live key belongs to, with what every ingestion request needs to know of the project. */
export interface KeyOwner {
  projectId: string
  environment: string
  monthlyLimit: number | null
}

export async function insertProject(orm: Orm, name: string, monthlyLimit: number | null): Promise<string> {
  const [row] = await orm.insert(projects).values({ name, monthlyLimit }).returning({ projectId: projects.projectId })
  return row.projectId
}

export async function insertEnvironment(orm: Orm, projectId: string, name: string): Promise<void> {
  await orm.insert(environments).values({ projectId, name }).onConflictDoNothing()
}

export async function insertKey(orm: Orm, key: { projectId: string; environment: string; keyHash: string; keyPrefix: string }): Promise<void> {
  await orm.insert(apiKeys).values(key)
}

export const countProjects = async (orm: Orm): Promise<number> => (await orm.select({ n: count() }).from(projects))[0].n

export const findProject = async (orm: Orm, projectId: string) =>
  (await orm.select().from(projects).where(eq(projects.projectId, projectId)))[0]

export const listProjects = (orm: Orm) => orm.select().from(projects).orderBy(asc(projects.createdAt))

export const listEnvironments = async (orm: Orm, projectId: string): Promise<string[]> =>
  (await orm.select({ name: environments.name }).from(environments).where(eq(environments.projectId, projectId)).orderBy(asc(environments.name))).map(
    (e) => e.name,
  )

export async function updateMonthlyLimit(orm: Orm, projectId: string, monthlyLimit: number | null): Promise<boolean> {
  const rows = await orm.update(projects).set({ monthlyLimit }).where(eq(projects.projectId, projectId)).returning({ id: projects.projectId })
  return rows.length > 0
}

export const listKeys = (orm: Orm, projectId: string) =>
  orm
    .select({ environment: apiKeys.environment, keyPrefix: apiKeys.keyPrefix, createdAt: apiKeys.createdAt, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.projectId, projectId))
    .orderBy(asc(apiKeys.environment), asc(apiKeys.createdAt))

/** Revokes the live keys of one environment, those starting with `prefix`, or the one key of `keyHash`; returns their hashes and prefixes. */
export async function revokeKeys(orm: Orm, projectId: string, which: { environment: string } | { prefix: string } | { keyHash: string }) {
  const match =
    'environment' in which ? eq(apiKeys.environment, which.environment)
    : 'keyHash' in which ? eq(apiKeys.keyHash, which.keyHash)
    : like(apiKeys.keyPrefix, `${escapeLike(which.prefix)}%`)
  return orm
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.projectId, projectId), isNull(apiKeys.revokedAt), match))
    .returning({ keyHash: apiKeys.keyHash, keyPrefix: apiKeys.keyPrefix })
}

export async function findLiveKey(orm: Orm, keyHash: string): Promise<KeyOwner | undefined> {
  const [row] = await orm
    .select({ projectId: apiKeys.projectId, environment: apiKeys.environment, monthlyLimit: projects.monthlyLimit })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.projectId, apiKeys.projectId))
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
  return row
}

export async function notify(orm: Orm, channel: string, payload: string): Promise<void> {
  await orm.execute(sql`select pg_notify(${channel}, ${payload})`)
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)
