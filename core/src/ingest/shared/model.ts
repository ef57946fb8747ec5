import { Kind, Type, TypeRegistry, type IntegerOptions, type TProperties, type TSchema } from '@sinclair/typebox'
import { GetErrorFunction, SetErrorFunction } from '@sinclair/typebox/errors'
import { t } from 'elysia'

/**
 * An optional field (`field?` in WIRE.md) that may also be null: clients in the field write an absent
 * value as null too, and the services take null as absent.
 */
export const Nullish = <T extends TSchema>(schema: T) => t.Optional(t.Union([schema, t.Null()]))

/** Client-made ids (WIRE.md): 1-128 of [A-Za-z0-9._:-]. */
export const Id = t.String({ pattern: '^[A-Za-z0-9._:-]{1,128}$' })
/**
 * A name or key that must not be empty: 1 to `maxLength` characters, one of them at least not NUL,
 * since NUL is dropped before storing (see stripNul) and a text of only NUL would be stored empty.
 */
export const RequiredText = (maxLength: number) => t.String({ minLength: 1, maxLength, pattern: '[^\\u0000]' })
/** `endUserId` may be absent or null. */
export const OptionalEndUserId = Nullish(Id)
export const Uuid = t.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' })
/**
 * A JSON integer, as WIRE.md's numbers are: TypeBox's own, not Elysia's `t.Integer`, which also takes
 * a numeric string ("99999999999999") and checks its range only where Elysia decodes it. In the
 * handlers' validation (validate.ts) the string went on as it came: a text where the row has an int,
 * refused by the database, or stored in a JSON column as text. A string is refused, as for any number.
 */
export const Integer = (options: IntegerOptions) => Type.Integer(options)
/**
 * Epoch milliseconds from the client clock. No maximum: a time more than 24 h ahead, a clock read in
 * microseconds among them, is taken as the receive time (clampTimestamp, WIRE.md), not refused.
 */
export const EpochMs = t.Number({ minimum: 0 })
/**
 * A free-form JSON object, or null (taken for "none", as fielded clients send it): a kind of its own
 * rather than `Nullish(t.Record(t.String(), t.Unknown()))`, which means the same. TypeBox's Clean,
 * which Elysia runs on every body before validating it, walks a record member by member, builds a
 * RegExp for each record it meets and checks every variant of the union around it uncompiled, all
 * to drop nothing: it was a fifth of core's time on a batch of 20 events. Clean passes a kind it
 * does not know through untouched, and the compiled check is one test.
 */
const JSON_OBJECT_OR_NULL = 'JsonObjectOrNull'
TypeRegistry.Set(JSON_OBJECT_OR_NULL, (_schema, value) => value === null || (typeof value === 'object' && isPlainObject(value)))
const defaultErrorMessage = GetErrorFunction()
SetErrorFunction((error) => (error.schema[Kind] === JSON_OBJECT_OR_NULL ? 'Expected an object or null' : defaultErrorMessage(error)))
export const Properties = t.Optional(Type.Unsafe<Record<string, unknown> | null>({ [Kind]: JSON_OBJECT_OR_NULL }))

/** An object as JSON makes one (not an array; nor a File of a multipart body). */
function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}
/**
 * A free text that may be absent or null. No length limit: the service cuts what it keeps (a URL can
 * carry kilobytes of state), the body limit bounds the rest.
 */
export const OptionalText = Nullish(t.String())

/**
 * The two forms of a body that takes one item or a batch, as `asBatch` reads them: the item with its
 * session, or `{sessionId, endUserId?, [key]: [items]}`, whose items may name their own session and
 * end user, else the batch's.
 */
export function itemOrBatch<K extends string, F extends TProperties>(key: K, fields: F, maxItems: number) {
  const items = t.Array(t.Object({ ...fields, sessionId: Nullish(Id) }), { minItems: 1, maxItems })
  type BatchFields = { sessionId: typeof Id; endUserId: typeof OptionalEndUserId } & { [P in K]: typeof items }
  return {
    item: t.Object({ ...fields, sessionId: Id }),
    batch: t.Object({ sessionId: Id, endUserId: OptionalEndUserId, [key]: items } as BatchFields),
  }
}
