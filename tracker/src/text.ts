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
  try {
    return JSON.stringify(value, nodeAsName) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * Whether `value` can be sent as properties: nothing, or a value that is an object in JSON (a cycle
 * or a BigInt cannot be sent; the service refuses a string, an array or a number).
 */
export function isProperties(value: unknown): boolean {
  try {
    return value == null || JSON.stringify(value)[0] === '{'
  } catch {
    return false
  }
}

export { isErrorLike }
