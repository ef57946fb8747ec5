/** `bytes` random bytes as lowercase hex (trace ids are 16 bytes, span ids 8). */
export const randomHex = (bytes: number): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => (b + 256).toString(16).slice(1)).join('')

/**
 * A UUID v7 (RFC 9562): 48 bits of milliseconds, then random bits. Ids sort by creation time, match
 * the server's UUID pattern, and need no secure context (`crypto.randomUUID` does).
 */
export function uuid(now: number): string {
  const hex = now.toString(16).padStart(12, '0').slice(-12) + randomHex(10)
  // The version (7) and the variant (binary 10xx) take the place of random bits.
  const variant = '89ab'[parseInt(hex[16], 16) & 3]
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20)}`
}
