import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { ValueError } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { ApiError } from '../../errors'

/**
 * Body validation in the handler, for bodies Elysia's own cannot check well: those that come in two
 * forms (one item, or a batch under a named array), where a TypeBox union would fail at "/" for any
 * mistake while checking the form the body chose names the failing field; and multipart uploads.
 * Unknown fields are dropped and errors answered as Elysia's are (400 `validation_failed`, `path`).
 */
export function validator<T extends TSchema>(schema: T): (value: unknown) => Static<T> {
  const compiled = TypeCompiler.Compile(schema)
  return (value) => {
    const cleaned = value !== null && typeof value === 'object' ? Value.Clean(schema, value) : value
    if (compiled.Check(cleaned)) return cleaned
    const first = mostSpecific(compiled.Errors(cleaned).First())
    const path = first?.path || '/'
    throw new ApiError('validation_failed', `${path}: ${first?.message ?? 'invalid value'}`, { path })
  }
}

/**
 * A union (`[...] | null`) fails as a whole ("Expected union value"); the error of the variant that
 * got furthest into the value says what is actually wrong, and where. Also read by the global error
 * handler (http/errors.ts) for the bodies Elysia validates.
 */
export function mostSpecific(error: ValueError | undefined): ValueError | undefined {
  if (!error?.errors?.length) return error
  let best = error
  for (const variant of error.errors) {
    const inner = mostSpecific(variant.First())
    if (inner && inner.path.length > best.path.length) best = inner
  }
  return best
}

/** The fields a one-item form shares with its batch form. */
interface Item {
  sessionId: string
  endUserId?: string | null
}

/**
 * One item or `{..., [batchKey]: [items]}`, answered in the batch form: the form that carries the
 * array is a batch, and one item becomes a batch of one under its own session and end user. An item
 * may carry a field of that name beyond WIRE.md's (an AggregateError spread into an error report
 * holds `errors`): one that has every field an item needs and a batch does not is an item, the field
 * ignored as any unknown one is, not a batch refused for it. Unless the body is a valid batch as
 * well: a batch carrying extra fields named as an item's would otherwise lose its every item.
 */
export function asBatch<S extends TSchema, B extends TSchema>(batchKey: string, single: S, batch: B) {
  const checkSingle = validator(single)
  const checkBatch = validator(batch)
  const compiledBatch = TypeCompiler.Compile(batch)
  const batchNeeds = new Set<string>(batch.required ?? [])
  const itemOnly = ((single.required ?? []) as string[]).filter((field) => !batchNeeds.has(field))
  // Cleaned on a copy: Value.Clean removes in place the item's fields a failed batch check then needs.
  const fitsBatch = (body: object) => compiledBatch.Check(Value.Clean(batch, structuredClone(body)))
  const isItem = (body: object) => itemOnly.length > 0 && itemOnly.every((field) => field in body) && !fitsBatch(body)
  return (body: unknown): Static<B> => {
    const isBatch = body !== null && typeof body === 'object' && !Array.isArray(body) && batchKey in body && !isItem(body)
    if (isBatch) return checkBatch(body)
    const item = checkSingle(body) as Item
    return { sessionId: item.sessionId, endUserId: item.endUserId, [batchKey]: [item] } as Static<B>
  }
}
