import { jsonParam } from './values'

/**
 * Rows in the text format of `COPY ... FROM STDIN`, for sinks that the writer may COPY (`Sink.copy`).
 * A value must be stored exactly as the sink's insert stores it: the two write the same table, and a
 * batch takes either path.
 */

const SPECIAL = /[\\\t\n\r\0]/
const SPECIALS = /[\\\t\n\r\0]/g
/** COPY reads these escaped. NUL is dropped, as stripNul and jsonParam drop it: Postgres text cannot hold it. */
const ESCAPED: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '' }
const escape = (value: string) => (SPECIAL.test(value) ? value.replace(SPECIALS, (c) => ESCAPED[c]) : value)

/**
 * One row: its values as Postgres reads them in text (see jsonText, timestampText), tab-separated,
 * on a line of its own; null is `\N`, so an empty string stays an empty string. Escaped, no value can
 * end the data early (a `\.` line) or split a row.
 */
export function copyRow(values: readonly (string | null)[]): string {
  // Most rows hold nothing COPY reads specially: one test of the whole row (joined by a character that
  // is not special itself) finds them, rather than a test and a copy per value.
  const needsEscape = SPECIAL.test(values.join('\x01'))
  let line = ''
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    line += (i === 0 ? '' : '\t') + (value === null ? '\\N' : needsEscape ? escape(value) : value)
  }
  return line + '\n'
}

/** A json or jsonb value as jsonParam writes it (no NUL escape, no lone surrogate); null and absent are NULL. */
export const jsonText = (value: unknown): string | null => (value === null || value === undefined ? null : jsonParam(value))

/** Seconds between the Unix epoch and Postgres's (2000-01-01), which its timestamps count from. */
const POSTGRES_EPOCH_SECONDS = 946_684_800

/**
 * A timestamptz value from epoch milliseconds: the very microsecond that `to_timestamp(ms / 1000.0)`
 * stores, as the inserts do. Postgres divides in float8, moves to its own epoch and rounds to the
 * microsecond half to even (float8_timestamptz); the same steps in JavaScript's float64 give the same
 * number, which is then written exactly. For times the writer takes (clampTimestamp: not after
 * tomorrow), the microseconds are integers well inside float64's exact range.
 */
export function timestampText(ms: number): string {
  const micros = roundHalfEven((ms / 1000 - POSTGRES_EPOCH_SECONDS) * 1e6) + POSTGRES_EPOCH_SECONDS * 1e6
  const millis = Math.floor(micros / 1000)
  const iso = new Date(millis).toISOString() // 2024-05-01T12:00:00.123Z
  return `${iso.slice(0, -1)}${String(micros - millis * 1000).padStart(3, '0')}Z`
}

/** C's rint in its default mode: to the nearest integer, halves to the even one. */
function roundHalfEven(x: number): number {
  const rounded = Math.round(x) // halves up
  return rounded - x === 0.5 && rounded % 2 !== 0 ? rounded - 1 : rounded
}
