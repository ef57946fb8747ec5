import { type SQL, sql } from 'drizzle-orm'

/**
 * How far a merged object (an end user's attributes, a group's properties, a session's automatic
 * properties) may grow. Each request is bounded by the body limit, but merges add up: without a bound,
 * anyone with a project's public key could grow one row for ever by sending new names, and every merge
 * rewrites the whole row. Past the bound new names are dropped (the request still succeeds: refusing
 * it would also lose the values it updates, and a replay chunk with it); values of names already
 * stored still update, as long as that does not grow the object past the bound either.
 */
export interface MergeBound {
  /** Names at the top level of the object. */
  names: number
  /** Bytes of the object: jsonb's size in the database, its JSON's in memory (see withinBound). */
  bytes: number
}

/**
 * Identify's attributes: far more than a user profile holds (CRMs cap custom fields at a few hundred),
 * small enough that an identify rewriting the row stays cheap.
 */
export const END_USER_ATTRIBUTES: MergeBound = { names: 1_000, bytes: 256 * 1024 }
/** Group properties: a company's profile, as large as a person's. */
export const GROUP_PROPERTIES: MergeBound = { names: 1_000, bytes: 256 * 1024 }
/**
 * A session's automatic properties are the tracker's own handful (language, screen, referrer...),
 * written on every replay chunk: a tight bound, the referrer URL (kilobytes at most) the largest part.
 */
export const SESSION_PROPERTIES: MergeBound = { names: 100, bytes: 64 * 1024 }

/**
 * `properties` cut to the bound, keeping the names in the order sent while they fit. Sizes are those
 * of the JSON text, near jsonb's own. The same object when it fits, as nearly always.
 */
export function withinBound<T extends Record<string, unknown>>(properties: T, bound: MergeBound): T {
  const names = Object.keys(properties)
  if (names.length <= bound.names && byteSize(properties) <= bound.bytes) return properties
  const kept: [string, unknown][] = []
  let bytes = 2 // {}
  for (const name of names) {
    if (kept.length === bound.names) break
    const size = byteSize(name) + byteSize(properties[name] ?? null) + 2 // : and ,
    if (bytes + size > bound.bytes) continue
    kept.push([name, properties[name]])
    bytes += size
  }
  return Object.fromEntries(kept) as T
}

/**
 * What the touches of one commit bring to a row, merged in memory, cut to the bound (withinBound),
 * when they do not fit it; else undefined. Sent beside the whole of them: a row the commit creates
 * takes this (insertedValue), an existing row merges the whole (boundedMerge), so that the names it
 * has still update however many new ones came with them.
 */
export function fittingIfOver(properties: Record<string, unknown> | null | undefined, bound: MergeBound): Record<string, unknown> | undefined {
  if (!properties) return undefined
  const kept = withinBound(properties, bound)
  return kept === properties ? undefined : kept
}

/**
 * The value an `insert ... on conflict` inserts, which is also what `excluded` holds for boundedMerge:
 * `whole` (a commit's merged touches), or `fitting` (fittingIfOver) when there is one and the row
 * does not exist yet (`existing`: a primary-key lookup, made only then). A row created by another
 * commit in between merges `fitting`: only the names cut are lost, and only in that race.
 */
export function insertedValue(whole: SQL, fitting: SQL, existing: SQL): SQL {
  return sql`case when ${fitting} is null then ${whole} when exists (${existing}) then ${whole} else ${fitting} end`
}

const encoder = new TextEncoder()
const byteSize = (value: unknown) => encoder.encode(JSON.stringify(value)).length

/**
 * `stored || incoming` (jsonb, shallow, the incoming value winning), bounded: when the merge adds
 * names past `bound.names` or grows the object past `bound.bytes`, the names new to `stored` are
 * dropped and only those it has update; when that alone still grows it past `bound.bytes`, `stored`
 * stays as it is. An update that grows nothing always passes, even on an object stored over the
 * bound (one written before it, or a new row a little over it: withinBound measures JSON text).
 *
 * Cheap when nothing grows, as on nearly every touch: the first test looks up only the incoming names
 * in `stored`; the names of the whole object are counted only when the incoming adds some. `stored`
 * and `incoming` are column references (they are repeated), never null.
 */
export function boundedMerge(stored: SQL, incoming: SQL, bound: MergeBound): SQL {
  const merged = sql`(${stored} || ${incoming})`
  const addsNames = sql`exists (select 1 from jsonb_object_keys(${incoming}) k where ${stored} -> k is null)`
  // The names `stored` has, with their incoming values.
  const updates = sql`(select coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) from jsonb_each(${incoming}) f where ${stored} -> f.key is not null)`
  // Whether the values of `given` take more room than the stored ones they replace (a new name's take it all).
  const grows = (given: SQL) =>
    sql`(select coalesce(sum(pg_column_size(f.value) - coalesce(pg_column_size(${stored} -> f.key), 0)), 0) from jsonb_each(${given}) f) > 0`
  const names = sql.raw(String(bound.names))
  const bytes = sql.raw(String(bound.bytes))
  return sql`case
    when not ${addsNames} and not ${grows(incoming)} then ${merged}
    when pg_column_size(${merged}) <= ${bytes} and (not ${addsNames} or (select count(*) from jsonb_object_keys(${merged})) <= ${names}) then ${merged}
    when not ${grows(updates)} or pg_column_size(${stored} || ${updates}) <= ${bytes} then ${stored} || ${updates}
    else ${stored} end`
}
