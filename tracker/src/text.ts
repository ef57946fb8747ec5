import { attempt, json } from './storage'
const isErrorLike = (value: unknown): value is Error =>
  !!value && typeof value == 'object' && 'message' in value

/**
 * Values put into JSON, at most: each is a character of it at least, so what is cut (a console line at
 * 8 KB, an error message at 32 KB) begins as the whole JSON would, and a huge object costs no more.
 */
export const JSON_MAX_VALUES = 8192

/**
 * Anything the page logs or throws, as text: strings as they are, errors by name and message, nodes by
 * name (JSON would show what frameworks keep on them, Vue a field's `_value`, jQuery its data, which
 * redaction never sees). Past JSON_MAX_VALUES values nothing more is read (200,000 items took 130 ms
 * whole, a freeze of the page): an array or object longer than what is left goes as a copy cut there,
 * and met again inside that copy it is a cycle, which JSON.stringify refuses too.
 */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value
  if (isErrorLike(value)) return `${value.name ?? 'Error'}: ${value.message}`
  let left = JSON_MAX_VALUES
  const cut = new Set<unknown>()
  const bounded = (_: string, item: any) => {
    if (--left < 0) return
    item = item?.nodeName ?? item
    if (cut.has(item)) throw item
    let count = left
    const copy: Record<string, unknown> = {}
    if (Array.isArray(item) && item.length > count) return cut.add(item) && item.slice(0, count)
    if (typeof item == 'object') {
      for (const key in item) {
        if (!count--) return cut.add(item) && copy
        copy[key] = item[key]
      }
    }
    return item
  }
  return attempt<string | null>(() => JSON.stringify(value, bounded), null) ?? String(value)
}

/**
 * `value` as it can be sent as properties, copied at the call: a batch goes later, and the page may
 * change its object meanwhile (the event would carry a later value, or a cycle that fails its whole
 * batch and every retry of it). Undefined for nothing; false for what cannot be sent: a cycle or a
 * BigInt, or what is no object in JSON (the service refuses a string, an array or a number). (`text`
 * is a local, a parameter for the bundle's size budget: the caller passes the value only.)
 */
export const asProperties = <T>(value: T, text?: string): T | undefined | false =>
  value == null ? undefined : attempt(() => (text = json(value))[0] === '{' && JSON.parse(text), false)

export { isErrorLike }
