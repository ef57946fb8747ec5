import { type SQL, sql } from 'drizzle-orm'
import { rowsOf, type Orm } from '../../db'
import type { Sink, SinkRows } from '../../sink'
import { jsonParam } from '../shared/values'
import { boundedMerge, END_USER_ATTRIBUTES, fittingIfOver, insertedValue, SESSION_PROPERTIES } from './bounded-merge'
import {
  endUserKey,
  endUserTouchIsKnown,
  firstSeenOf,
  knownAfter,
  MAX_WINDOWS_PER_SESSION,
  mergeEndUserTouches,
  mergeSessionTouches,
  sessionKey,
  sessionTouchIsKnown,
  type EndUserTouch,
  type KnownRow,
  type SessionTouch,
} from './service'
import type { SessionEndUserTouch, SessionTouches } from './touch'

/** How many window ids the cache of committed sessions holds at most (see knownRows). */
export const KNOWN_WINDOWS_HELD = 100_000

/**
 * Rows this process committed, so that a touch adding nothing (see ACTIVITY_RESOLUTION_MS) is not
 * written again. Bounded: emptied when full, which only costs a few redundant writes. Full means
 * MAX_ENTRIES rows, or KNOWN_WINDOWS_HELD window ids among them: a real session holds one or two, but a
 * client can name each of its sessions with MAX_WINDOWS_PER_SESSION ids of 128 characters.
 */
export function knownRows<Touch>() {
  const MAX_ENTRIES = 20_000
  const known = new Map<string, KnownRow>()
  let windowsHeld = 0
  // What `write` actually wrote, by the array the writer handed it, for `committed`.
  const written = new WeakMap<Touch[], Touch[]>()
  return {
    get: (key: string) => known.get(key),
    wrote(rows: Touch[], touches: Touch[]) {
      written.set(rows, touches)
    },
    committed(rows: Touch[], keyOf: (touch: Touch) => string, asKnown: (touch: Touch, before: KnownRow | undefined) => KnownRow) {
      const touches = written.get(rows) ?? []
      if (known.size + touches.length > MAX_ENTRIES || windowsHeld > KNOWN_WINDOWS_HELD) {
        known.clear()
        windowsHeld = 0
      }
      for (const touch of touches) {
        const key = keyOf(touch)
        const before = known.get(key)
        const after = asKnown(touch, before)
        windowsHeld += after.windowIds.size - (before?.windowIds.size ?? 0)
        known.set(key, after)
      }
    },
  }
}

const knownSessions = knownRows<SessionTouch>()
const knownEndUsers = knownRows<EndUserTouch>()

/**
 * The touch brings an entry URL from an earlier page load than the stored one (or the first one):
 * it takes the place of the stored one, with its page's referrer. Requests arrive out of order (a
 * page's first chunk may wait offline or in the outbox while later pages send theirs). Rows stored
 * before `entry_at` existed count from their session's start.
 */
const EARLIER_ENTRY = sql.raw('excluded.entry_url is not null and (s.entry_url is null or excluded.entry_at < coalesce(s.entry_at, s.started_at))')

/**
 * The session has no user agent yet and the touch brings one: the touch's user agent is taken with
 * everything parsed from it, nulls included, never a column at a time (see userAgentOf).
 */
const USER_AGENT_UNKNOWN = sql.raw('s.user_agent is null and excluded.user_agent is not null')

/**
 * The windows a session keeps (see firstWindows): a touch's, already merged to at most this many,
 * each once and first seen first, are appended to the stored ones until there are this many.
 */
const MAX_WINDOWS = sql.raw(String(MAX_WINDOWS_PER_SESSION))

/**
 * Whether the conflicting row is one of `touches`: those that show no activity (`noActivity`), whose
 * rows keep their times, or those whose attributes replace the stored ones (`replacesAttributes`).
 * An insert's `excluded` holds only columns, so the keys go beside the touches (not the stored times
 * read before the insert: a concurrent request may create the row). Usually there are none, and the
 * test is a constant.
 */
function isOneOf(touches: { projectId: string; id: string }[], idColumn: 'session_id' | 'end_user_id'): SQL {
  if (touches.length === 0) return sql`false`
  return sql`(excluded.project_id, excluded.${sql.raw(idColumn)}) in (
    select q."projectId", q.id from jsonb_to_recordset(${jsonParam(touches)}::jsonb) as q("projectId" uuid, id text))`
}

/**
 * Creates or extends sessions: times widen (never by a touch without activity; those of a session
 * one created are only its receipt, marked `times_are_receipt`, and the first activity replaces
 * them rather than widens), first-known fields stay, properties merge, windows are added up to
 * MAX_WINDOWS_PER_SESSION; an ended session's end moves with activity that comes after it (what a
 * page sent as it closed, racing its goodbye), so that it never ends before its last activity. A
 * touch that adds nothing is not written, and so takes no row lock: commits of a busy session do
 * not queue behind each other. A sink that needs a session's row to itself locks it (presence does).
 */
export const sessionsSink: Sink<SessionTouch> = {
  name: 'sessions',
  phase: 'sessions',
  singleStatement: true,
  async write(tx, rows) {
    const touches = mergeSessionTouches(rows).filter((t) => !sessionTouchIsKnown(t, knownSessions.get(sessionKey(t))))
    knownSessions.wrote(rows, touches)
    if (touches.length === 0) return
    const quiet = isOneOf(touches.filter((t) => t.noActivity).map((t) => ({ projectId: t.projectId, id: t.sessionId })), 'session_id')
    const sent = touches.map((t) => ({ ...t, fittingProperties: fittingIfOver(t.automaticProperties, SESSION_PROPERTIES) }))
    const datedAt = propertiesAtOf(touches)
    // The touch's properties are the newest the session has seen: nothing stored shows later activity
    // (read on the row this statement holds locked, so whatever commit came first). Else a newer chunk
    // may be stored, and sessionPropertiesSink decides, in a statement of its own.
    const newest = sql`(s.times_are_receipt or to_timestamp(${datedAt} / 1000.0) >= s.last_activity_at)`
    await tx.execute(sql`
      insert into sessions as s (project_id, session_id, environment, end_user_id, started_at, last_activity_at, times_are_receipt,
        entry_url, entry_at, referrer, user_agent, browser, browser_version, os, os_version, device_type, device_vendor, device_model,
        automatic_properties, window_ids, geo, sdk_version)
      select t."projectId", t."sessionId", t.environment, t."endUserId", to_timestamp(t."firstAt" / 1000.0), to_timestamp(t."lastAt" / 1000.0), t."noActivity",
        t."entryUrl", to_timestamp(t."entryAt" / 1000.0), t.referrer, t."userAgent", t.browser, t."browserVersion", t.os, t."osVersion", t."deviceType", t."deviceVendor", t."deviceModel",
        ${insertedValue(sql`t."automaticProperties"`, sql`t."fittingProperties"`, sql`select from sessions e where e.project_id = t."projectId" and e.session_id = t."sessionId"`)},
        coalesce(t."windowIds", '{}'), t.geo, t."sdkVersion"
      from jsonb_to_recordset(${jsonParam(sent)}::jsonb) as t(
        "projectId" uuid, "sessionId" text, environment text, "endUserId" text, "firstAt" float8, "lastAt" float8, "noActivity" boolean,
        "entryUrl" text, "entryAt" float8, referrer text, "userAgent" text, browser text, "browserVersion" text, os text, "osVersion" text,
        "deviceType" text, "deviceVendor" text, "deviceModel" text, "automaticProperties" jsonb, "fittingProperties" jsonb, "windowIds" text[], geo jsonb,
        "sdkVersion" text)
      on conflict (project_id, session_id) do update set
        started_at = case when ${quiet} then s.started_at when s.times_are_receipt then excluded.started_at else least(s.started_at, excluded.started_at) end,
        last_activity_at = case when ${quiet} then s.last_activity_at when s.times_are_receipt then excluded.last_activity_at
                                else greatest(s.last_activity_at, excluded.last_activity_at) end,
        times_are_receipt = case when ${quiet} then s.times_are_receipt end,
        ended_at = case when s.ended_at is null or ${quiet} then s.ended_at else greatest(s.ended_at, excluded.last_activity_at) end,
        end_user_id = coalesce(s.end_user_id, excluded.end_user_id),
        entry_url = case when ${EARLIER_ENTRY} then excluded.entry_url else s.entry_url end,
        entry_at = case when ${EARLIER_ENTRY} then excluded.entry_at else s.entry_at end,
        referrer = case when ${EARLIER_ENTRY} then excluded.referrer
                        when s.entry_url is null and excluded.referrer is not null and (s.referrer is null or excluded.started_at < s.started_at)
                        then excluded.referrer else s.referrer end,
        user_agent = case when ${USER_AGENT_UNKNOWN} then excluded.user_agent else s.user_agent end,
        browser = case when ${USER_AGENT_UNKNOWN} then excluded.browser else s.browser end,
        browser_version = case when ${USER_AGENT_UNKNOWN} then excluded.browser_version else s.browser_version end,
        os = case when ${USER_AGENT_UNKNOWN} then excluded.os else s.os end,
        os_version = case when ${USER_AGENT_UNKNOWN} then excluded.os_version else s.os_version end,
        device_type = case when ${USER_AGENT_UNKNOWN} then excluded.device_type else s.device_type end,
        device_vendor = case when ${USER_AGENT_UNKNOWN} then excluded.device_vendor else s.device_vendor end,
        device_model = case when ${USER_AGENT_UNKNOWN} then excluded.device_model else s.device_model end,
        automatic_properties = case when excluded.automatic_properties is null then s.automatic_properties
                                    when ${datedAt} is null then ${fillMerge(STORED_PROPERTIES, sql`excluded.automatic_properties`)}
                                    when ${newest} then ${boundedMerge(STORED_PROPERTIES, sql`excluded.automatic_properties`, SESSION_PROPERTIES)}
                                    else s.automatic_properties end,
        window_ids = case when cardinality(excluded.window_ids) = 0 or cardinality(s.window_ids) >= ${MAX_WINDOWS} then s.window_ids
                          else s.window_ids || array(select w from unnest(excluded.window_ids) with ordinality as e(w, n)
                                                     where w <> all(s.window_ids) order by n limit ${MAX_WINDOWS} - cardinality(s.window_ids)) end,
        geo = coalesce(excluded.geo, s.geo),
        sdk_version = case when excluded.sdk_version is null then s.sdk_version when ${datedAt} is null then coalesce(s.sdk_version, excluded.sdk_version)
                           when ${newest} then excluded.sdk_version else s.sdk_version end`)
  },
  committed: (rows) => knownSessions.committed(rows, sessionKey, (t, before) => knownAfter(before, t)),
}

const STORED_PROPERTIES = sql`coalesce(s.automatic_properties, '{}'::jsonb)`

/** `incoming`'s names that `stored` lacks, added to it (bounded): what properties older than the stored ones bring. */
const fillMerge = (stored: SQL, incoming: SQL) =>
  boundedMerge(stored, sql`(${incoming} - array(select jsonb_object_keys(${stored})))`, SESSION_PROPERTIES)

/**
 * The `propertiesAt` of the conflicting row's touch (null when undated). An insert's `excluded` holds
 * only columns: a jsonb object keyed by project and session, looked up in the statement's constant.
 */
function propertiesAtOf(touches: readonly SessionTouch[]): SQL {
  // One text whether or not a touch is dated: one statement to prepare (see preparingClient).
  const dated = touches.filter((t) => t.propertiesAt !== undefined)
  const at = Object.fromEntries(dated.map((t) => [`${t.projectId.toLowerCase()}/${t.sessionId}`, t.propertiesAt]))
  return sql`(${jsonParam(at)}::jsonb ->> (excluded.project_id::text || '/' || excluded.session_id))::float8`
}

/**
 * The properties and SDK version of replay chunks whose session showed later activity than they when
 * the sessions sink wrote it (see its `newest`): kept as the newest unless a chunk with a later last
 * event is stored, else only filling names the session lacks, so that a chunk resent after newer ones
 * sets nothing back. A statement after the sessions sink's (its phase, and named after it), in the
 * same commit, which holds the session rows locked: it sees every chunk of the commits that wrote
 * them before (their locks, then their chunks, are taken and written before they commit), whichever
 * core process made them; in a phase before replay_chunks, it does not see this commit's own chunks,
 * whose properties it brings.
 */
export const sessionPropertiesSink: Sink<SessionTouch> = {
  name: 'sessions_properties',
  phase: 'sessions',
  singleStatement: true,
  async write(tx, rows) {
    const touches = mergeSessionTouches(rows).filter((t) => t.propertiesAt !== undefined && (t.automaticProperties || t.sdkVersion))
    if (touches.length === 0) return
    const sent = touches.map(({ projectId, sessionId, propertiesAt, automaticProperties, sdkVersion }) => ({ projectId, sessionId, propertiesAt, automaticProperties, sdkVersion }))
    const at = sql`to_timestamp(t."propertiesAt" / 1000.0)`
    const newer = sql`exists (select from replay_chunks c where c.project_id = t."projectId" and c.session_id = t."sessionId" and c.last_timestamp > ${at})`
    await tx.execute(sql`
      update sessions s set
        automatic_properties = case when t."automaticProperties" is null then s.automatic_properties
                                    when ${newer} then ${fillMerge(STORED_PROPERTIES, sql`t."automaticProperties"`)}
                                    else ${boundedMerge(STORED_PROPERTIES, sql`t."automaticProperties"`, SESSION_PROPERTIES)} end,
        sdk_version = case when t."sdkVersion" is null then s.sdk_version when ${newer} then coalesce(s.sdk_version, t."sdkVersion") else t."sdkVersion" end
      from jsonb_to_recordset(${jsonParam(sent)}::jsonb) as t("projectId" uuid, "sessionId" text, "propertiesAt" float8, "automaticProperties" jsonb, "sdkVersion" text)
      where s.project_id = t."projectId" and s.session_id = t."sessionId" and ${at} < s.last_activity_at`)
  },
}

/** A session's end user, and the person that end user is an alias of (null when it is none). */
export interface SessionEndUser {
  endUserId: string
  person: string | null
}

/**
 * sessionKey -> the end user of each of `sessions` that has one, read in a commit after the sessions
 * sink wrote these sessions. That write keeps an end user a session has (`coalesce`) and holds the
 * session's row locked to the commit (or skipped a touch of a session this process knew had an end
 * user, which never changes), so concurrent requests of a new session naming no end user, in one
 * commit or in several processes, all find the end user the first of them gave it, and none needs
 * one of its own. The caller is a sink of a phase after the sessions sink's (see SinkPhase).
 */
export async function sessionEndUsers(tx: Orm, sessions: readonly { projectId: string; sessionId: string }[]): Promise<Map<string, SessionEndUser>> {
  if (sessions.length === 0) return new Map()
  const named = sessions.map(({ projectId, sessionId }) => ({ projectId, sessionId }))
  // One primary-key lookup per session (a lateral, kept unflattened by `offset 0`), never a scan; and
  // so of its end user's alias: a plain left join hashed a scan of every alias of every project.
  const found = rowsOf<{ project_id: string; session_id: string; end_user_id: string; person: string | null }>(
    await tx.execute(sql`
      select t."projectId"::text as project_id, t."sessionId" as session_id, s.end_user_id, a.end_user_id as person
      from jsonb_to_recordset(${jsonParam(named)}::jsonb) as t("projectId" uuid, "sessionId" text)
      cross join lateral (
        select end_user_id from sessions where project_id = t."projectId" and session_id = t."sessionId" and end_user_id is not null offset 0
      ) s
      left join lateral (
        select end_user_id from end_user_aliases where project_id = t."projectId" and alias_id = s.end_user_id offset 0
      ) a on true`),
  )
  return new Map(found.map((f) => [sessionKey({ projectId: f.project_id, sessionId: f.session_id }), { endUserId: f.end_user_id, person: f.person }]))
}

/**
 * Creates or extends end users; identify's attributes merge into what is stored (or replace it:
 * replacesAttributes). Times as the sessions sink's, `times_are_receipt` included.
 */
export const endUsersSink: Sink<EndUserTouch> = {
  name: 'end_users',
  singleStatement: true,
  async write(tx, rows) {
    const touches = mergeEndUserTouches(rows).filter((t) => !endUserTouchIsKnown(t, knownEndUsers.get(endUserKey(t))))
    knownEndUsers.wrote(rows, touches)
    if (touches.length === 0) return
    const quiet = isOneOf(touches.filter((t) => t.noActivity).map((t) => ({ projectId: t.projectId, id: t.endUserId })), 'end_user_id')
    const replacing = isOneOf(touches.filter((t) => t.replacesAttributes).map((t) => ({ projectId: t.projectId, id: t.endUserId })), 'end_user_id')
    const sent = touches.map((t) => ({ ...t, fittingAttributes: fittingIfOver(t.attributes, END_USER_ATTRIBUTES) }))
    await tx.execute(sql`
      insert into end_users as u (project_id, end_user_id, attributes, geo, first_seen_at, last_seen_at, times_are_receipt)
      select t."projectId", t."endUserId",
        ${insertedValue(sql`coalesce(t.attributes, '{}'::jsonb)`, sql`t."fittingAttributes"`, sql`select from end_users e where e.project_id = t."projectId" and e.end_user_id = t."endUserId"`)}, t.geo, to_timestamp(coalesce(t."firstAt", t.at) / 1000.0), to_timestamp(t.at / 1000.0),
        t."noActivity"
      from jsonb_to_recordset(${jsonParam(sent)}::jsonb) as t(
        "projectId" uuid, "endUserId" text, at float8, "firstAt" float8, "noActivity" boolean, attributes jsonb, "fittingAttributes" jsonb, geo jsonb)
      on conflict (project_id, end_user_id) do update set
        attributes = case when ${replacing} then excluded.attributes when excluded.attributes = '{}'::jsonb then u.attributes
                          else ${boundedMerge(sql`u.attributes`, sql`excluded.attributes`, END_USER_ATTRIBUTES)} end,
        geo = coalesce(excluded.geo, u.geo),
        first_seen_at = case when ${quiet} then u.first_seen_at when u.times_are_receipt then excluded.first_seen_at else least(u.first_seen_at, excluded.first_seen_at) end,
        last_seen_at = case when ${quiet} then u.last_seen_at when u.times_are_receipt then excluded.last_seen_at else greatest(u.last_seen_at, excluded.last_seen_at) end,
        times_are_receipt = case when ${quiet} then u.times_are_receipt end`)
  },
  committed: (rows) => knownEndUsers.committed(rows, endUserKey, (t, before) => knownAfter(before, { firstAt: firstSeenOf(t), lastAt: t.at, noActivity: t.noActivity })),
}

/**
 * The end users of requests that named none: each session's, read after the sessions sink wrote the
 * session (see sessionEndUsers), which keeps an end user it has and takes the made one otherwise.
 * The made end user is stored only when its session took it: no request leaves one the session does
 * not have. They are handed to the end-user sink, which writes the commit's end users in one statement.
 */
export const sessionEndUserSink: Sink<SessionEndUserTouch> = {
  name: 'sessions_end_user',
  phase: 'people',
  feeds: [endUsersSink],
  async write(tx, rows, hand) {
    const ofSessions = await sessionEndUsers(tx, rows.map((r) => ({ projectId: r.made.projectId, sessionId: r.sessionId })))
    const touches = rows.map((row) => {
      row.endUserId = ofSessions.get(sessionKey({ projectId: row.made.projectId, sessionId: row.sessionId }))?.endUserId ?? row.made.endUserId
      return { ...row.made, endUserId: row.endUserId }
    })
    hand!(endUsersSink, touches)
  },
}

/**
 * The writes of a request's session and end-user touches, beside those of its own rows; with the
 * session's end user when the request named none (`ofSession`).
 */
export function touchWrites(touches: SessionTouches): SinkRows[] {
  const writes: SinkRows[] = [
    { sink: sessionsSink, rows: touches.sessions },
    { sink: endUsersSink, rows: touches.endUsers },
  ]
  const dated = touches.sessions.filter((t) => t.propertiesAt !== undefined)
  if (dated.length > 0) writes.push({ sink: sessionPropertiesSink, rows: dated })
  const ofSessions = touches.ofSessions ?? (touches.ofSession ? [touches.ofSession] : [])
  if (ofSessions.length > 0) writes.push({ sink: sessionEndUserSink, rows: ofSessions })
  return writes
}
