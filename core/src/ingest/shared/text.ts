import { stripNul } from './values'

/** WIRE.md: log messages over 32 KB are truncated, not rejected. The other free texts follow suit. */
export const MESSAGE_LIMIT_BYTES = 32 * 1024
export const STACK_LIMIT_BYTES = 64 * 1024
/** Names (of events, spans, errors) are indexed or grouped by: kept to 1 KB, 256 characters of any script. */
export const NAME_LIMIT_BYTES = 1024
/** Short texts: a network entry's status text, error type and name, span name; a log line's user agent. */
export const SHORT_LIMIT_BYTES = 1024
/** URLs of pages and requests (network errors, error reports, heartbeats). */
export const URL_LIMIT_BYTES = 8 * 1024
/** A log line's page URL is kept as long as its message may be, more than other URLs. */
export const LOG_URL_LIMIT_BYTES = MESSAGE_LIMIT_BYTES
/** What a session keeps of its entry URL, referrer and SDK version, in characters (see sessionText). */
export const SESSION_TEXT_LIMIT_CHARS = 2048
const MARK = '…'
const encoder = new TextEncoder()

/**
 * At most `limitBytes` of UTF-8, cut on a character boundary and marked with an ellipsis; NUL
 * characters dropped (see stripNul). Short texts, the common case, are returned as they are.
 */
export function truncateUtf8(text: string, limitBytes: number): string {
  const clean = stripNul(text)
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most texts are decided without encoding them.
  if (clean.length * 3 <= limitBytes || encoder.encode(clean).byteLength <= limitBytes) return clean
  const room = limitBytes - encoder.encode(MARK).byteLength
  const bytes = encoder.encode(clean).subarray(0, room)
  // A cut inside a multi-byte character leaves U+FFFD at the end; drop it rather than store it.
  const cut = new TextDecoder().decode(bytes).replace(/\uFFFD$/, '')
  return cut + MARK
}

/** An optional free text, truncated; empty and absent become null. */
export const optionalText = (text: string | null | undefined, limitBytes: number): string | null =>
  text ? truncateUtf8(text, limitBytes) || null : null

/**
 * A session's entry URL, referrer or SDK version: its first SESSION_TEXT_LIMIT_CHARS characters
 * (UTF-16 code units), cut without a mark, NUL dropped; anything but a string with more than NUL
 * in it is null (an entry URL of NUL alone, kept as "", would stand as the session's entry, its time
 * with it, in place of the first real page). A character of two code units (an emoji) across the
 * limit is left out whole: half of it would be stored as U+FFFD.
 */
export function sessionText(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const end = isHighSurrogate(value.charCodeAt(SESSION_TEXT_LIMIT_CHARS - 1)) ? SESSION_TEXT_LIMIT_CHARS - 1 : SESSION_TEXT_LIMIT_CHARS
  return stripNul(value.slice(0, end)) || null
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff
const splitsPair = (text: string, at: number) => at > 0 && at < text.length && isHighSurrogate(text.charCodeAt(at - 1)) && isLowSurrogate(text.charCodeAt(at))

/**
 * `text.slice(start, end)` in UTF-16 code units, without half of a character of two (an emoji) at
 * either end: the half would be stored as U+FFFD. Such a character across a bound is left out whole.
 */
export function sliceChars(text: string, start: number, end = text.length): string {
  const from = splitsPair(text, start) ? start + 1 : start
  const to = splitsPair(text, end) ? end - 1 : end
  return text.slice(from, Math.max(from, to))
}
