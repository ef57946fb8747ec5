import { attempt } from './storage'
const isErrorLike = (value: unknown): value is Error =>
  typeof value === 'object' && value !== null && 'message' in value

/**
 * A page's node, as its name only: JSON would show what frameworks keep on it (Vue a field's `_value`,
 * jQuery its data), which redaction never sees.
 */
const nodeAsName = (_: string, value: unknown) => (value as Node | null)?.nodeName ?? value

/** Anything the page logs or throws, as text: strings as they are, errors by name and message, nodes by name. */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value
  if (isErrorLike(value)) return `${value.name ?? 'Error'}: ${value.message}`
  return attempt(() => JSON.stringify(value, nodeAsName), undefined) ?? String(value)
}

/**
 * `value` as it can be sent as properties, copied at the call: a batch goes later, and the page may
 * change its object meanwhile (the event would carry a later value, or a cycle that fails its whole
 * batch and every retry of it). Undefined for nothing; false for what cannot be sent: a cycle or a
 * BigInt, or what is no object in JSON (the service refuses a string, an array or a number).
 */
export const asProperties = <T>(value: T): T | undefined | false =>
  attempt(() => {
    const json = JSON.stringify(value)
    return value == null ? undefined : json[0] === '{' && JSON.parse(json)
  }, false)

export { isErrorLike }
