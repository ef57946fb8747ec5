const isErrorLike = (value: unknown): value is Error =>
  typeof value === 'object' && value !== null && 'message' in value

/** Anything the page logs or throws, as text: strings as they are, errors by name and message. */
export function toText(value: unknown): string {
  if (typeof value === 'string') return value
  if (isErrorLike(value)) return `${value.name ?? 'Error'}: ${value.message}`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Whether `value` can be sent as JSON (a cycle or a BigInt cannot). */
export function isJson(value: unknown): boolean {
  try {
    JSON.stringify(value)
    return true
  } catch {
    return false
  }
}

export { isErrorLike }
