import { randomUUID } from 'node:crypto'
import { type SQL, sql } from 'drizzle-orm'
import type { Orm } from '../../db'
import { rowsOf } from '../../db'
import type { Sink } from '../../sink'
import { sessionKey, type EndUserTouch } from '../sessions/service'
import { endUsersSink, sessionEndUsers } from '../sessions/store'
import { jsonParam } from '../shared/values'
import { issuePeopleSink, type AliasMove } from '../errors/people'
import { attributesAsLeft, mergedPending } from './as-left'
import { repeatsOf, repeatsWhatIsStored } from './repeats'
import { isIdentify, type IdentifyRow, type ReadsAliases } from './service'

/** Names the identity lock among Postgres advisory locks (two-key form: this class, the project's hash). */
export const IDENTITY_LOCK_CLASS = 7_254_814

const key = (projectId: string, endUserId: string) => `${projectId}\n${endUserId}`

/**
 * Identify and auth-aware identify. Without an end user named, the session's is identified, and the
 * one made for the request only when the session has none (see IdentifyRow). An end user that is an
 * alias resolves to its person first. An auth-aware identify then looks for the person of the project
 * who already has the same auth values (the first seen of them), makes this end user (and whatever was
 * aliased to it) an alias of that person, and merges the attributes there (a person that becomes an
 * alias brings along those of its own the person has not); a person with other values for these
 * fields is someone else who used that device before, so the device moves alone and that someone
 * stays a person under a new id (see leftBehind); an alias whose values
 * no one has, and whose person has others, becomes a person of its own. Auth-aware identifies of
 * one project run one at a time (a transaction-scoped advisory lock), so two devices signing in at
 * once end as one person. Plain identifies take the same lock shared (see identityLocks).
 *
 * The people found are handed to the end-user sink, which writes every end user of the commit in one
 * sorted statement. Written here, one by one, they would be locked in an order of their own, after
 * rows that other commits lock first, and concurrent commits (two processes) would deadlock. So are
 * the end users made aliases, to the sink that moves what they counted among Issues' users to their
 * person (issuePeopleSink), for Issues are locked after end users. Rows that only read aliases
 * (ReadsAliases) take the lock and nothing else.
 */
export const identitySink: Sink<IdentifyRow | ReadsAliases> = {
  name: 'identity',
  phase: 'people',
  feeds: [endUsersSink, issuePeopleSink],
  async write(tx, given, hand) {
    // Taken first, before any row this sink locks: a commit waiting for it holds no row that its
    // holder will want (the sessions phase locks before it, and nothing after it waits on it).
    // Aliases are read once the lock is held, awaited rather than left to the order the queries are
    // sent in: read before, they may be those the commit holding it changes (a person left behind
    // under a new id, an end user made an alias), and attributes would go where no lookup reads them.
    await Promise.all(identityLocks(given).map((lock) => tx.execute(lock)))
    const rows = given.filter(isIdentify)
    if (rows.length === 0) return
    const canonical = await aliasesOf(tx, rows)
    const ofSessions = await sessionEndUsers(
      tx,
      rows.flatMap((r) => (r.sessionOfMadeId ? [{ projectId: r.projectId, sessionId: r.sessionOfMadeId }] : [])),
    )
    const sessionOf = (row: IdentifyRow) =>
      row.sessionOfMadeId ? ofSessions.get(sessionKey({ projectId: row.projectId, sessionId: row.sessionOfMadeId })) : undefined
    for (const row of rows) {
      const session = sessionOf(row)
      if (session?.person) canonical.set(key(row.projectId, session.endUserId), session.person)
    }
    const endUserOf = (row: IdentifyRow) => sessionOf(row)?.endUserId ?? row.endUserId
    const personOf = (projectId: string, endUserId: string) => canonical.get(key(projectId, endUserId)) ?? endUserId

    // What this commit writes to each person, in arrival order, plain identifies among the auth-aware
    // ones: an auth-aware identify finds people as every identify before it left them (an email a
    // plain identify just gave), and attributes merge in the order they were sent, as they would
    // have one commit after another.
    const people: EndUserTouch[] = []
    // Identifies that may change nothing (see repeatsWhatIsStored), each checked in one statement.
    const mayRepeat: SQL[] = []
    // End users made aliases, in order, with the person their Issue users go to.
    const aliased: AliasMove[] = []
    for (const row of rows) {
      const endUserId = endUserOf(row)
      const current = personOf(row.projectId, endUserId)
      const found = row.auth ? await findPerson(tx, row.projectId, row.auth, people) : undefined
      // An alias (a device) signing in with values no one has, where its person has others of its
      // own, is someone else on that device too, not yet seen: it becomes a person of its own.
      // Merged there, the values would make the person it was an alias of someone else.
      const leaves = !found && row.auth !== null && endUserId !== current && (await holdsOtherValues(tx, row.projectId, current, row.auth, people))
      const person = found ?? (leaves ? endUserId : current)
      if (leaves) {
        // What it counted among Issues' users while an alias is its person's, merged with the
        // person's own: which of it was this device's can no longer be told, so it stays there.
        await unalias(tx, row.projectId, endUserId)
        // It starts from what it is told now: what its row holds is of whom it was before (an alias's
        // row is cleared, but one aliased by an older core, or written by a plain identify that had
        // read it before it became one, is not).
        people.push(clearedAttributes(row.projectId, endUserId, row.at))
      } else if (person !== current) {
        // An alias (a device) signing in as another person moves alone (WIRE.md: "this userId becomes an
        // alias"): the person it was an alias of may be someone else who used the same device. So does a
        // person with other values for these fields: it is someone else too, who stays a person with its
        // own aliases and attributes, under another id (leftBehind). Otherwise it is the same person,
        // found by other fields, and comes whole.
        const isPerson = endUserId === current
        // An alias moving alone brings only what it counted as itself, before it was one: what it
        // counted since is its old person's, merged with the person's own (see `leaves`).
        let countedGoTo = person
        if (isPerson) {
          const someoneElse = await holdsOtherValues(tx, row.projectId, endUserId, row.auth!, people)
          const left = someoneElse ? await leftBehind(tx, row.projectId, endUserId, people, row.at) : undefined
          const aliasesGoTo = left?.endUserId ?? person
          // What it counted among Issues' users goes with its aliases: that someone's, when left behind.
          countedGoTo = aliasesGoTo
          await moveAliases(tx, row.projectId, endUserId, aliasesGoTo)
          for (const [k, v] of canonical) if (v === current && k.startsWith(`${row.projectId}\n`)) canonical.set(k, aliasesGoTo)
          if (left) people.push(left)
          else {
            // A person brings its attributes along, the auth values it was found by among them: left
            // behind on an alias, which no lookup finds, they would identify no one any more.
            const brought = await attributesToBring(tx, row.projectId, endUserId, person, people)
            if (Object.keys(brought).length > 0) people.push({ projectId: row.projectId, endUserId: person, at: row.at, attributes: brought })
            // And its first seen: the person was seen since that device first was (README: an end user's first seen).
            const firstSeen = await firstSeenAsLeft(tx, row.projectId, endUserId, people)
            if (firstSeen !== undefined && firstSeen < row.at) people.push({ projectId: row.projectId, endUserId: person, at: row.at, firstAt: firstSeen })
          }
        }
        // Its attributes are a person's now (moved, brought or left behind above, or sent to its
        // person as an alias): kept on its row, no lookup reads them, they would count twice in the
        // planner's estimates for the index on attributes, and come back if it ever left its person.
        if (await hasAttributes(tx, row.projectId, endUserId, people)) people.push(clearedAttributes(row.projectId, endUserId, row.at))
        await alias(tx, row.projectId, endUserId, person)
        aliased.push({ projectId: row.projectId, from: endUserId, to: countedGoTo })
      }
      if (person === current && !leaves) mayRepeat.push(repeatsWhatIsStored(row, person, people))
      canonical.set(key(row.projectId, endUserId), person)
      row.canonical = person
      people.push({ projectId: row.projectId, endUserId: person, at: row.at, attributes: row.attributes })
    }
    hand!(endUsersSink, people)
    hand!(issuePeopleSink, aliased)
    return await repeatsOf(tx, mayRepeat)
  },
}

/**
 * The identity lock of each project of `rows`, in one order (by project, whatever the mode, so that
 * commits of several projects never wait on each other in a circle): exclusive where an identify is
 * auth-aware, as such an identify makes aliases; shared where all are plain. A plain identify makes no
 * alias, but reads whether its end user is one: without the lock it could read "no alias" while
 * another commit (another process, or the writer's other commit) makes it one, and write its
 * attributes to the end user's own row, which no lookup reads from then on and the next alias-making
 * identify clears: answered 200, they would be lost. Shared, plain identifies never wait on each
 * other, only on an auth-aware one under way (and it on them); one statement, in commits that carry one.
 * Commits of error reports take it shared too (ReadsAliases), in this same pass: locks of several
 * projects taken in two would not be in one order.
 */
function identityLocks(rows: readonly (IdentifyRow | ReadsAliases)[]): SQL[] {
  const authAware = new Set(rows.flatMap((r) => (isIdentify(r) && r.auth ? [r.projectId] : [])))
  return [...new Set(rows.map((r) => r.projectId))]
    .sort()
    .map((projectId) =>
      authAware.has(projectId)
        ? sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_CLASS}, hashtext(${projectId}))`
        : sql`select pg_advisory_xact_lock_shared(${IDENTITY_LOCK_CLASS}, hashtext(${projectId}))`,
    )
}

/**
 * alias id -> person, for the end users named in `rows` that are aliases. One primary-key lookup per
 * end user (a lateral, kept unflattened by `offset 0`): joined plainly, the planner guesses
 * jsonb_to_recordset at 100 rows and hashes a scan of every alias of every project instead.
 */
async function aliasesOf(tx: Orm, rows: IdentifyRow[]): Promise<Map<string, string>> {
  const named = rows.map((r) => ({ projectId: r.projectId, endUserId: r.endUserId }))
  const found = rowsOf<{ project_id: string; alias_id: string; end_user_id: string }>(
    await tx.execute(sql`
      select r."projectId"::text as project_id, r."endUserId" as alias_id, a.end_user_id
      from jsonb_to_recordset(${jsonParam(named)}::jsonb) as r("projectId" uuid, "endUserId" text)
      cross join lateral (
        select end_user_id from end_user_aliases where project_id = r."projectId" and alias_id = r."endUserId" offset 0
      ) a`),
  )
  return new Map(found.map((a) => [key(a.project_id, a.alias_id), a.end_user_id]))
}

/**
 * The first-seen person of the project (not an alias) with the same value for every one of `auth`,
 * compared as `sightline_auth_values` folds them (migration 0009: an email address trimmed and in
 * lowercase, whatever its field is called): otherwise equal JSON (jsonb equality: `1` is not `"1"`,
 * a list or an object is equal only whole, the order of an object's keys is no part of it).
 * Containment alone takes a list or object that holds more for the same, and would merge different
 * people; it stays as the first test, the one the index on the folded attributes
 * (end_users_auth_values_idx) serves. People are taken as the commit will leave them: stored, with
 * `pending` (what the commit writes to them, in order) merged in, or only pending (also when pending
 * replaces what is stored: see clearedAttributes). First seen as the end-user sink leaves it too: a
 * stored first-seen that is only a receipt (`times_are_receipt`) is replaced by the commit's first
 * activity, not kept as the earlier one; with none, it is no time at all and comes after every real
 * one, so a stand-in never wins "first seen".
 */
export function personLookup(projectId: string, auth: Record<string, unknown>, pending: readonly EndUserTouch[] = []): SQL {
  const wanted = authValuesFolded(sql`${jsonParam(auth)}::jsonb`)
  return sql`
    with pending as (
      select p."endUserId" as end_user_id, p.attributes, p."replacesAttributes" as replaces, to_timestamp(p."firstAt" / 1000.0) as first_seen_at
      from jsonb_to_recordset(${jsonParam(mergedPending(projectId, pending))}::jsonb)
        as p("endUserId" text, attributes jsonb, "firstAt" float8, "replacesAttributes" boolean)
    ),
    candidates as (
      select u.end_user_id, case when p.replaces then p.attributes else u.attributes || coalesce(p.attributes, '{}'::jsonb) end as attributes,
        ${FIRST_SEEN_AS_LEFT} as first_seen_at
      from end_users u left join pending p on p.end_user_id = u.end_user_id
      where u.project_id = ${projectId} and ${authValuesFolded(sql`u.attributes`)} @> ${wanted}
      union
      select p.end_user_id, case when p.replaces then p.attributes else coalesce(u.attributes, '{}'::jsonb) || p.attributes end, ${FIRST_SEEN_AS_LEFT}
      from pending p left join end_users u on u.project_id = ${projectId} and u.end_user_id = p.end_user_id
    )
    select c.end_user_id from candidates c
    where not exists (select 1 from jsonb_each(${wanted}) w where ${authValuesFolded(sql`c.attributes`)} -> w.key is distinct from w.value)
      and not exists (select 1 from end_user_aliases a where a.project_id = ${projectId} and a.alias_id = c.end_user_id)
    order by c.first_seen_at nulls last, c.end_user_id
    limit 1`
}

/** Attributes (a jsonb object) as auth values are compared: see personLookup. */
const authValuesFolded = (attributes: SQL): SQL => sql`sightline_auth_values(${attributes})`

/**
 * The first-seen time of stored end user `u` with pending `p` (either may be absent) as the end-user
 * sink writes it: the pending first activity replaces a receipt stand-in and widens a real time
 * (`least` passes over a null). Null when there is only a stand-in (or only pending without activity).
 */
const FIRST_SEEN_AS_LEFT = sql.raw('case when u.times_are_receipt then p.first_seen_at else least(u.first_seen_at, p.first_seen_at) end')

async function hasAttributes(tx: Orm, projectId: string, endUserId: string, pending: readonly EndUserTouch[]): Promise<boolean> {
  const [found] = rowsOf<{ has: boolean }>(await tx.execute(sql`select ${attributesAsLeft(projectId, endUserId, pending)} <> '{}'::jsonb as has`))
  return found?.has === true
}

/**
 * A touch that empties the attributes of `endUserId`, before those the commit writes to it after,
 * without activity (its times stay). Handed to the end-user sink like every other write of an end
 * user: an update of its row from here would lock it out of the sink's order (see identitySink).
 */
function clearedAttributes(projectId: string, endUserId: string, at: number): EndUserTouch {
  return { projectId, endUserId, at, noActivity: true, attributes: {}, replacesAttributes: true }
}

async function findPerson(tx: Orm, projectId: string, auth: Record<string, unknown>, pending: readonly EndUserTouch[]): Promise<string | undefined> {
  const [found] = rowsOf<{ end_user_id: string }>(await tx.execute(personLookup(projectId, auth, pending)))
  return found?.end_user_id
}

/**
 * Whether `person`, as the commit leaves it (see personLookup), has a value of its own for one of the
 * fields of `auth` other than the one there, compared as personLookup compares them (an email in
 * another case is the same); a field it has no value for, as authValues sees none, is no other value.
 */
async function holdsOtherValues(tx: Orm, projectId: string, person: string, auth: Record<string, unknown>, pending: readonly EndUserTouch[]): Promise<boolean> {
  const [found] = rowsOf<{ other: boolean }>(
    await tx.execute(sql`
      select exists (
        select 1 from jsonb_each(${authValuesFolded(sql`${jsonParam(auth)}::jsonb`)}) f
        where c.attributes -> f.key not in ('null'::jsonb, '""'::jsonb, '[]'::jsonb, '{}'::jsonb)
          and ${authValuesFolded(sql`c.attributes`)} -> f.key <> f.value
      ) as other
      from (select ${attributesAsLeft(projectId, person, pending)} as attributes) c`),
  )
  return found?.other === true
}

/**
 * The attributes of `from`, a person becoming an alias of `to`, that `to` has no value for, both as
 * the commit leaves them (see personLookup): what `to` has already stays.
 */
async function attributesToBring(tx: Orm, projectId: string, from: string, to: string, pending: readonly EndUserTouch[]): Promise<Record<string, unknown>> {
  const [found] = rowsOf<{ attributes: Record<string, unknown> }>(
    await tx.execute(sql`
      select ${attributesAsLeft(projectId, from, pending)} - array(select jsonb_object_keys(${attributesAsLeft(projectId, to, pending)})) as attributes`),
  )
  return found?.attributes ?? {}
}

/**
 * When `endUserId` was first seen, as the commit leaves it (see personLookup): undefined when it has
 * no row, or its row only a receipt stand-in (`times_are_receipt`), and the commit shows no activity.
 */
async function firstSeenAsLeft(tx: Orm, projectId: string, endUserId: string, pending: readonly EndUserTouch[]): Promise<number | undefined> {
  const written = mergedPending(projectId, pending).find((p) => p.endUserId === endUserId)
  const [stored] = rowsOf<{ first_at: number }>(
    await tx.execute(sql`
      select (extract(epoch from first_seen_at) * 1000)::float8 as first_at
      from end_users where project_id = ${projectId} and end_user_id = ${endUserId} and times_are_receipt is not true`),
  )
  const firstAt = Math.min(stored ? Number(stored.first_at) : Infinity, written?.firstAt ?? Infinity)
  return firstAt === Infinity ? undefined : firstAt
}

/** `endUserId` is an alias no more: a person of its own. */
async function unalias(tx: Orm, projectId: string, endUserId: string): Promise<void> {
  await tx.execute(sql`delete from end_user_aliases where project_id = ${projectId} and alias_id = ${endUserId}`)
}

/** Points `endUserId` at `person`. */
async function alias(tx: Orm, projectId: string, endUserId: string, person: string): Promise<void> {
  await tx.execute(sql`
    insert into end_user_aliases (project_id, alias_id, end_user_id) values (${projectId}, ${endUserId}, ${person})
    on conflict (project_id, alias_id) do update set end_user_id = excluded.end_user_id`)
}

/** The aliases of `from` become aliases of `to`, so aliases never chain. */
async function moveAliases(tx: Orm, projectId: string, from: string, to: string): Promise<void> {
  await tx.execute(sql`update end_user_aliases set end_user_id = ${to} where project_id = ${projectId} and end_user_id = ${from}`)
}

/**
 * The person `endUserId` was, left behind when that device signs in as someone else: a new end user,
 * made by this touch, with its attributes (its auth values among them, so that signing in with them
 * on any device finds that person) and its first and last seen (its place among people with the same
 * values), as the commit leaves them (see personLookup): a stored time that is only a receipt
 * (`times_are_receipt`) gives way to the commit's activity, and where there is none the new row holds
 * the same stand-in, marked as one (a touch without activity), for the first activity to replace.
 * Its aliases go to it. Not one of the aliases promoted: one may have a row of its own, from before
 * it was aliased, whose attributes would mix in, and a person seen on no other device has none. The
 * device's own row is then cleared (see identitySink). `receivedAt` stands in when nothing else does.
 */
async function leftBehind(tx: Orm, projectId: string, endUserId: string, pending: readonly EndUserTouch[], receivedAt: number): Promise<EndUserTouch> {
  const written = mergedPending(projectId, pending).find((p) => p.endUserId === endUserId)
  const [stored] = rowsOf<{ attributes: Record<string, unknown>; first_at: number; last_at: number; receipt: boolean | null }>(
    await tx.execute(sql`
      select attributes, (extract(epoch from first_seen_at) * 1000)::float8 as first_at, (extract(epoch from last_seen_at) * 1000)::float8 as last_at,
        times_are_receipt as receipt
      from end_users where project_id = ${projectId} and end_user_id = ${endUserId}`),
  )
  const attributes = written?.replacesAttributes ? written.attributes : { ...stored?.attributes, ...written?.attributes }
  const seen = stored && stored.receipt !== true ? stored : undefined
  const firstAt = Math.min(seen ? Number(seen.first_at) : Infinity, written?.firstAt ?? Infinity)
  if (firstAt === Infinity) {
    const standIn = stored ? { firstAt: Number(stored.first_at), at: Number(stored.last_at) } : { firstAt: receivedAt, at: receivedAt }
    return { projectId, endUserId: randomUUID(), ...standIn, noActivity: true, attributes }
  }
  const at = Math.max(seen ? Number(seen.last_at) : -Infinity, written?.lastAt ?? -Infinity, firstAt)
  return { projectId, endUserId: randomUUID(), at, firstAt, attributes }
}
