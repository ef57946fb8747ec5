const DAY_MS = 24 * 60 * 60 * 1000

/** Below a nanosecond: stored as 0 all the same (timestamptz holds microseconds). */
const UNDER_A_NANOSECOND_MS = 1e-6

/**
 * Client clocks lie: a time more than 24 h ahead of receipt is taken as the receive time (WIRE.md).
 * One before 1970 (a span event moved with its start: spanTimes), or under a nanosecond past it, is
 * 0: the stores divide by 1000 in float8 (`to_timestamp(ms / 1000.0)`), and Postgres refuses a
 * quotient that underflows ("value out of range: underflow", 5e-324 ms), where timestamptz, which
 * holds microseconds, would keep 0 of it anyway.
 */
export function clampTimestamp(timestampMs: number | undefined | null, receivedAtMs: number): number {
  if (typeof timestampMs !== 'number' || !Number.isFinite(timestampMs)) return receivedAtMs
  if (timestampMs < UNDER_A_NANOSECOND_MS) return 0
  return timestampMs > receivedAtMs + DAY_MS ? receivedAtMs : timestampMs
}

const UUID = /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/i

/**
 * A client's UUID as stored: lowercase with dashes, from that form in any case or from its 32 hex
 * digits alone (as Sentry writes event ids), so both forms of one id are one key. Null for anything else.
 */
export function canonicalUuid(value: unknown): string | null {
  const parts = typeof value === 'string' ? UUID.exec(value) : null
  return parts ? parts.slice(1).join('-').toLowerCase() : null
}

/** Postgres text cannot hold NUL, and jsonb refuses `\u0000`; both are dropped, the rest kept. */
export const stripNul = (text: string): string => (text.includes('\0') ? text.replaceAll('\0', '') : text)

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * A text as the database will hold it: without NUL, and a lone surrogate (text a browser cut inside
 * an emoji) as U+FFFD, as jsonParam sends it and as both drivers encode a bound parameter. For keys
 * merged in memory before an `insert ... on conflict do update`: two keys stored as one must be one
 * row of the statement too, which otherwise meets that row twice and fails the whole commit.
 */
export const storedText = (text: string): string => stripNul(text).replace(LONE_SURROGATE, '\ufffd')

const ESCAPED_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g
/** JSON.stringify writes a paired surrogate as the character and a lone one as an escape: these are all lone. */
const ESCAPED_SURROGATE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g

/**
 * A batch of rows as the one JSON parameter of a `jsonb_to_recordset` statement: one statement text
 * whatever the row count, the same on both drivers. (jsonb rather than json: parsed once, its jsonb
 * fields are taken as they are instead of parsed again per row, a quarter less of the server's time
 * per row.) NUL escapes are removed (see stripNul). A lone surrogate (text a browser cut inside an
 * emoji) becomes U+FFFD, as TextEncoder makes it: Postgres refuses it in JSON, which would refuse the
 * whole request.
 */
export function jsonParam(rows: unknown): string {
  let json = JSON.stringify(rows)
  if (json.includes('\\u0000')) json = json.replace(ESCAPED_NUL, '$1')
  if (json.includes('\\ud')) json = json.replace(ESCAPED_SURROGATE, '$1\\ufffd')
  return json
}
